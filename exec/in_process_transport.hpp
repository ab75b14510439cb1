// The transport of ranks that are threads of one process: one mailbox per
// receiving rank, a map from (sender, tag) to the tensor, guarded by a mutex
// and a condition variable. Sending moves the tensor in; receiving moves it
// out. Abort wakes every waiter.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "exec/transport.hpp"

namespace gpipe::exec {

class InProcessTransport final : public Transport {
 public:
  explicit InProcessTransport(int num_ranks);

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
            Tensor tensor) override;
  [[nodiscard]] Tensor receive(schedules::Rank to, schedules::Rank from,
                               const MessageTag& tag) override;
  void abort() override;

  // Messages sent and not yet received, over all mailboxes (for tests and
  // the end-of-run check that every message was consumed).
  [[nodiscard]] std::size_t pending() const;

 private:
  struct Mailbox {
    mutable std::mutex mutex;
    std::condition_variable arrived;
    bool aborted = false;
    std::map<std::pair<int, MessageTag>, Tensor> messages;  // keyed by (sender, tag)
  };
  [[nodiscard]] Mailbox& mailbox(schedules::Rank rank);

  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
};

}  // namespace gpipe::exec
