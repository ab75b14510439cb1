// Host storage for tensors, kept for reuse. A training step allocates the same
// tensors, of the same sizes, as the step before it; through the C heap, large
// blocks went back to the kernel when freed and came back as fresh pages, and
// in a 10-step run of transformer:layers=4,hidden=256,heads=4,seq=128 the
// page faults and page clearing took 6 % of the time (perf). Here a freed
// block waits, by its exact size, for the next request of that size, so from
// the second step on a step allocates nothing.
//
// Bounded: the blocks kept never hold more bytes than the most that has been
// in use at once (the steady state needs no more), so the process holds at
// most twice its peak; past that a freed block goes back to the heap.
// Thread-safe: one rank's thread frees what another's allocated (a message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace gpipe::exec {

class StoragePool {
 public:
  struct Stats {
    std::int64_t requests = 0;  // blocks handed out
    std::int64_t reused = 0;    // of which came from the kept blocks
    std::int64_t kept_bytes = 0;
    std::int64_t in_use_bytes = 0;
    std::int64_t peak_in_use_bytes = 0;
  };

  // The one pool of this process.
  static StoragePool& instance();

  // A block of `words` 4-byte words (at least 1), not zeroed; throws
  // std::bad_alloc as new does.
  [[nodiscard]] std::uint32_t* take(std::size_t words);
  // Returns a block that take(words) gave.
  void give_back(std::uint32_t* block, std::size_t words) noexcept;

  // Frees every kept block (the bound resets to what is in use now).
  void trim() noexcept;
  [[nodiscard]] Stats stats() const;

 private:
  StoragePool() = default;

  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<std::uint32_t*>> kept_;  // by words
  Stats stats_;
};

// The deleter of a tensor's storage: back to the pool.
struct PoolDeleter {
  std::size_t words = 0;
  void operator()(std::uint32_t* block) const noexcept { StoragePool::instance().give_back(block, words); }
};

}  // namespace gpipe::exec
