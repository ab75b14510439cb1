// The link of ranks that are threads of one process, on the CPU: host
// tensors handed over through exec::Mailboxes. Sending moves the tensor in
// (charged to no account while in flight) and never blocks; receiving blocks
// until that exact message is there and moves it out: no bytes are copied.
// Both are timed on the run's timer as the SEND's and the RECV's intervals.
// Abort wakes every waiter.
#pragma once

#include <cstddef>

#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/link.hpp"
#include "exec/runtime/mailboxes.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

class InProcessLink final : public Link<Tensor> {
 public:
  // `timer` times measured SENDs and RECVs; null: none are timed. A receive
  // polls for `spin` before it sleeps (exec/runtime/spin_wait.hpp).
  explicit InProcessLink(int num_ranks, ActionTimer* timer = nullptr, SpinBudget spin = SpinBudget::zero())
      : mailboxes_(num_ranks, spin), timer_(timer) {}

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, Tensor tensor,
            const ActionMark& mark) override;
  [[nodiscard]] Tensor receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                               const ActionMark& mark) override;
  void abort() override { mailboxes_.abort(); }

  // Messages sent and not yet received, over all mailboxes (for tests and
  // the end-of-run check that every message was consumed).
  [[nodiscard]] std::size_t pending() const { return mailboxes_.pending(); }

 private:
  Mailboxes<Tensor> mailboxes_;
  ActionTimer* timer_;
};

}  // namespace gpipe::exec::cpu
