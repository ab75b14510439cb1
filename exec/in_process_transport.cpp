#include "exec/in_process_transport.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "exec/aborted.hpp"

namespace gpipe::exec {

InProcessTransport::InProcessTransport(int num_ranks) {
  if (num_ranks < 1) throw std::invalid_argument("a transport needs at least one rank");
  mailboxes_.reserve(static_cast<std::size_t>(num_ranks));
  for (int r = 0; r < num_ranks; ++r) mailboxes_.push_back(std::make_unique<Mailbox>());
}

InProcessTransport::Mailbox& InProcessTransport::mailbox(schedules::Rank rank) {
  if (rank.value < 0 || rank.at() >= mailboxes_.size()) {
    throw std::out_of_range(fmt::format("transport has no rank {}", rank.value));
  }
  return *mailboxes_[rank.at()];
}

void InProcessTransport::send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
                              Tensor tensor) {
  tensor.charge_to(nullptr);  // in flight: neither the sender's nor the receiver's memory
  Mailbox& box = mailbox(to);
  {
    std::scoped_lock lock(box.mutex);
    if (box.aborted) throw Aborted();
    const auto [it, inserted] = box.messages.try_emplace({from.value, tag}, std::move(tensor));
    if (!inserted) {
      throw std::logic_error(fmt::format("rank {} sent the {} to rank {} twice", from.value,
                                         to_string(tag), to.value));
    }
  }
  box.arrived.notify_all();
}

Tensor InProcessTransport::receive(schedules::Rank to, schedules::Rank from,
                                   const MessageTag& tag) {
  Mailbox& box = mailbox(to);
  std::unique_lock lock(box.mutex);
  const std::pair<int, MessageTag> key{from.value, tag};
  auto it = box.messages.end();
  box.arrived.wait(lock, [&] {
    it = box.messages.find(key);
    return box.aborted || it != box.messages.end();
  });
  if (box.aborted) throw Aborted();
  Tensor tensor = std::move(it->second);
  box.messages.erase(it);
  return tensor;
}

void InProcessTransport::abort() {
  for (auto& box : mailboxes_) {
    {
      std::scoped_lock lock(box->mutex);
      box->aborted = true;
    }
    box->arrived.notify_all();
  }
}

std::size_t InProcessTransport::pending() const {
  std::size_t count = 0;
  for (const auto& box : mailboxes_) {
    std::scoped_lock lock(box->mutex);
    count += box->messages.size();
  }
  return count;
}

}  // namespace gpipe::exec
