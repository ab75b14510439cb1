// The transport of ranks that are threads of one process: host tensors
// through exec::Mailboxes. Sending moves the tensor in (charged to no
// account while in flight); receiving moves it out. Abort wakes every waiter.
#pragma once

#include <cstddef>

#include "exec/runtime/mailboxes.hpp"
#include "exec/runtime/transport.hpp"

namespace gpipe::exec {

class InProcessTransport final : public Transport {
 public:
  explicit InProcessTransport(int num_ranks) : mailboxes_(num_ranks) {}

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
            Tensor tensor) override;
  [[nodiscard]] Tensor receive(schedules::Rank to, schedules::Rank from,
                               const MessageTag& tag) override;
  void abort() override { mailboxes_.abort(); }

  // Messages sent and not yet received, over all mailboxes (for tests and
  // the end-of-run check that every message was consumed).
  [[nodiscard]] std::size_t pending() const { return mailboxes_.pending(); }

 private:
  Mailboxes<Tensor> mailboxes_;
};

}  // namespace gpipe::exec
