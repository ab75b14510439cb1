// Messages between the ranks of one process, matched by (sender, tag): one
// mailbox per receiving rank, guarded by a mutex and a condition variable.
// Posting moves the message in and never blocks; taking blocks until that
// exact message is there, and moves it out. abort() wakes every waiter, which
// then throws Aborted. With a spin budget (exec/runtime/spin_wait.hpp), a
// taker first polls for that long, and only then sleeps. The CPU's in-process link carries host tensors in it
// (exec/cpu/in_process_link.hpp); the CUDA one on one GPU carries device
// tensors with the event that marks them ready (exec/cuda/backend/).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "exec/runtime/aborted.hpp"
#include "exec/runtime/message.hpp"
#include "exec/runtime/spin_wait.hpp"

namespace gpipe::exec {

template <class Message>
class Mailboxes {
 public:
  explicit Mailboxes(int num_ranks, SpinBudget spin = SpinBudget::zero()) : spin_(spin) {
    if (num_ranks < 1) throw std::invalid_argument("mailboxes need at least one rank");
    boxes_.reserve(static_cast<std::size_t>(num_ranks));
    for (int r = 0; r < num_ranks; ++r) boxes_.push_back(std::make_unique<Box>());
  }

  // Throws Aborted after abort(), std::logic_error for a message posted twice.
  void post(schedules::Rank from, schedules::Rank to, const MessageTag& tag, Message message) {
    Box& box = mailbox(to);
    {
      std::scoped_lock lock(box.mutex);
      if (box.aborted) throw Aborted();
      const auto [it, inserted] = box.messages.try_emplace({from.value, tag}, std::move(message));
      if (!inserted) {
        throw std::logic_error(fmt::format("rank {} sent the {} to rank {} twice", from.value,
                                           to_string(tag), to.value));
      }
      box.changes.fetch_add(1, std::memory_order_release);
    }
    box.arrived.notify_all();
  }

  // Blocks until `tag` from `from` has reached `to`; throws Aborted when the run is aborted.
  [[nodiscard]] Message take(schedules::Rank to, schedules::Rank from, const MessageTag& tag) {
    Box& box = mailbox(to);
    std::unique_lock lock(box.mutex);
    const std::pair<int, MessageTag> key{from.value, tag};
    auto it = box.messages.end();
    const auto here = [&] {
      it = box.messages.find(key);
      return box.aborted || it != box.messages.end();
    };
    // Poll (unlocked) while the budget lasts, re-checking at each change of
    // the box (another message, or abort); then sleep until it is here.
    const auto polling_ends = std::chrono::steady_clock::now() + spin_;
    while (!here()) {
      const auto left = std::chrono::duration_cast<SpinBudget>(polling_ends - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        box.arrived.wait(lock, here);
        break;
      }
      const std::uint64_t seen = box.changes.load(std::memory_order_acquire);
      lock.unlock();
      (void)spin_until([&] { return box.changes.load(std::memory_order_acquire) != seen; }, left);
      lock.lock();
    }
    if (box.aborted) throw Aborted();
    Message message = std::move(it->second);
    box.messages.erase(it);
    return message;
  }

  // Wakes every blocked take (which then throws Aborted); idempotent.
  void abort() {
    for (auto& box : boxes_) {
      {
        std::scoped_lock lock(box->mutex);
        box->aborted = true;
        box->changes.fetch_add(1, std::memory_order_release);
      }
      box->arrived.notify_all();
    }
  }

  // Messages posted and not yet taken, over all mailboxes.
  [[nodiscard]] std::size_t pending() const {
    std::size_t count = 0;
    for (const auto& box : boxes_) {
      std::scoped_lock lock(box->mutex);
      count += box->messages.size();
    }
    return count;
  }

 private:
  struct Box {
    mutable std::mutex mutex;
    std::condition_variable arrived;
    bool aborted = false;
    std::map<std::pair<int, MessageTag>, Message> messages;  // keyed by (sender, tag)
    std::atomic<std::uint64_t> changes{0};  // bumped by each post and by abort, for pollers
  };
  [[nodiscard]] Box& mailbox(schedules::Rank rank) {
    if (rank.value < 0 || rank.at() >= boxes_.size()) {
      throw std::out_of_range(fmt::format("no mailbox for rank {}", rank.value));
    }
    return *boxes_[rank.at()];
  }

  std::vector<std::unique_ptr<Box>> boxes_;
  SpinBudget spin_;
};

}  // namespace gpipe::exec
