// A caching allocator for device memory with exact accounting.
//
// Why cache: cudaMalloc and cudaFree synchronise the device, which would
// serialise the stages of a pipeline. A training step allocates the same
// shapes in every micro-batch, so freed blocks are kept and handed out again;
// after the first step no call reaches the device. Memory goes back to the
// device only on release() (or destruction).
//
// Sizes: every request is rounded up to a multiple of kBlockBytes (512 B, at
// least one block, so a 0-byte request still gets a distinct pointer), and a
// freed block is reused only for a request of the same rounded size. Exact
// size bins waste nothing beyond the 512 B rounding; their cost (a block of
// another size is never split or merged) does not arise in a loop of
// repeating shapes.
//
// Accounting: requested bytes (exact, what callers asked for, the figure the
// simulator predicts) and reserved bytes (taken from the device), with peaks
// and counts. An allocation may be charged to an exec::MemoryAccount with its
// exact requested bytes, the same rule as the CPU executor's Tensor, so the
// CUDA run's activation peak compares byte for byte with the simulator. Beside
// it the device's own used bytes (cudaMemGetInfo) are sampled whenever the
// reservation grows, and on request.
//
// Streams: free() is a host-side event and the block may be handed out again
// at once, as with PyTorch's allocator without record_stream. Free a block
// only when every stream that used it is ordered before its next user (the
// same stream, or an event the next user's stream waits on).
//
// Thread-safe. Pointers must be freed through the allocator that gave them.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "exec/cuda/device_memory.hpp"
#include "exec/memory_account.hpp"

namespace gpipe::exec::cuda {

struct AllocatorStats {
  std::int64_t requested_bytes = 0;       // live allocations, exactly as requested
  std::int64_t peak_requested_bytes = 0;
  std::int64_t allocated_bytes = 0;       // live allocations, rounded to blocks
  std::int64_t reserved_bytes = 0;        // held from the device: live + cached
  std::int64_t peak_reserved_bytes = 0;
  std::int64_t live_allocations = 0;
  std::int64_t allocations = 0;           // allocate() calls
  std::int64_t frees = 0;                 // free() calls
  std::int64_t cache_hits = 0;            // allocations served from a cached block
  std::int64_t device_allocations = 0;    // DeviceMemory::allocate calls
  std::int64_t device_frees = 0;          // DeviceMemory::free calls (release() only)
};

class CachingAllocator {
 public:
  static constexpr std::int64_t kBlockBytes = 512;

  // `device` must outlive the allocator, and the allocator every pointer it gave.
  explicit CachingAllocator(DeviceMemory& device);
  // Releases the cache; a live allocation left at this point is a leak of the
  // caller's and is not freed (it may still be in use on a stream).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The block size a request of `bytes` occupies. Throws InputError for a negative size.
  [[nodiscard]] static std::int64_t rounded_size(std::int64_t bytes);

  // At least `bytes` of device memory, charged to `account` (exact bytes) when not null.
  [[nodiscard]] void* allocate(std::int64_t bytes, MemoryAccount* account = nullptr);
  // Gives the block back to the cache and refunds its account.
  // Throws std::logic_error for a pointer this allocator did not give out.
  void free(void* pointer);
  // Moves the charge of a live allocation to another account (nullptr: none).
  void charge_to(void* pointer, MemoryAccount* account);
  // Returns every cached (free) block to the device; live allocations stay.
  void release();

  [[nodiscard]] AllocatorStats stats() const;
  // Forgets the peaks (sets them to the current values; the device peak to 0
  // until the next snapshot), e.g. at a step's start.
  void reset_peaks();

  // The device's used bytes now (a cudaMemGetInfo snapshot), and the highest
  // snapshot seen: taken at every growth of the reservation and each call here.
  [[nodiscard]] std::int64_t device_used_bytes();
  [[nodiscard]] std::int64_t device_peak_used_bytes() const;

 private:
  struct Block {
    std::int64_t requested = 0;
    std::int64_t rounded = 0;
    MemoryAccount* account = nullptr;
  };
  void note_device_usage(std::int64_t used);

  DeviceMemory& device_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::map<std::int64_t, std::vector<void*>> cached_;  // rounded size -> free blocks
  AllocatorStats stats_;
  std::int64_t device_peak_used_ = 0;
};

}  // namespace gpipe::exec::cuda
