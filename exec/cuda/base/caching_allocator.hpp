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
// Streams (PyTorch's record_stream rule): every block belongs to the pool
// of one stream, the one it was allocated for, and returns to that pool only;
// a block freed in stream X's pool is never handed to an allocation for
// stream Y. Work on one stream runs in order, so a block freed for X may be
// handed out again for X at once. The rule for callers:
//   - allocate for the stream that first writes the block;
//   - record_use every other stream that touches it, before freeing it;
//   - free from any thread, at any time after the last use was enqueued.
// free() refunds the account and lowers the live figures at once (a logical
// free, what the simulator counts), but a block with recorded uses records one
// event per such stream and stays "pending" (still reserved, not reusable)
// until every event is done; pending blocks are polled, never waited for, at
// each allocate() and release(). nullptr is a pool like any other: by
// convention the owner's compute stream, the one it uses for everything it
// allocates without naming a stream. The stream of record_use, by contrast, is
// where the event is recorded: nullptr there is the legacy default stream.
//
// Thread-safe: allocate, free, record_use from any threads. Pointers must be
// freed through the allocator that gave them. The MemoryAccount observers run
// outside the allocator's lock; DeviceMemory::allocate too (it may
// synchronise), its event calls (fast) under it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/kernels/launch.hpp"
#include "exec/layers/memory_account.hpp"

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
  std::int64_t pending_blocks = 0;        // freed, waiting for another stream's work (in reserved)
};

class CachingAllocator {
 public:
  static constexpr std::int64_t kBlockBytes = 512;

  // `device` must outlive the allocator, and the allocator every pointer it gave.
  explicit CachingAllocator(DeviceMemory& device);
  // Releases the cache; a live allocation left at this point is a leak of the
  // caller's and is not freed (it may still be in use on a stream). So is a
  // block still pending (its streams' work not done): synchronise the streams
  // first to have every block returned to the device.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The block size a request of `bytes` occupies. Throws InputError for a negative size.
  [[nodiscard]] static std::int64_t rounded_size(std::int64_t bytes);

  // At least `bytes` of device memory from the pool of `stream`, charged to `account`
  // (exact bytes) when not null.
  [[nodiscard]] void* allocate(std::int64_t bytes, MemoryAccount* account = nullptr,
                               StreamHandle stream = nullptr);
  // The live block is also used by work enqueued on `stream`: free() will keep it from
  // reuse until that work is done. Recording a stream twice is one use; the block's own
  // pool stream needs none (a no-op). `stream` must still exist when the block is freed.
  // Throws std::logic_error for a pointer not live here.
  void record_use(void* pointer, StreamHandle stream);
  // Refunds the block's account at once and gives the block back to its pool, at once
  // when it has no recorded use, else once the events recorded now on those streams are
  // done. Throws std::logic_error for a pointer this allocator did not give out, and
  // RunError when an event cannot be recorded (the block then stays live).
  void free(void* pointer);
  // Moves the charge of a live allocation to another account (nullptr: none).
  void charge_to(void* pointer, MemoryAccount* account);
  // Returns every cached (free) block to the device, after moving the pending blocks whose
  // events are done into the cache; live allocations and still pending blocks stay.
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
    StreamHandle pool = nullptr;
    std::vector<StreamHandle> uses;  // other streams, each once
  };
  // Freed, waiting for `events` (one per used stream) before rejoining its pool.
  struct Pending {
    void* pointer = nullptr;
    StreamHandle pool = nullptr;
    std::int64_t rounded = 0;
    std::vector<EventToken> events;
  };
  // Rounded size -> free blocks of one pool.
  using Bins = std::map<std::int64_t, std::vector<void*>>;

  // Moves every pending block whose events are all done into its pool. Holds mutex_.
  void poll_pending();
  void note_device_usage(std::int64_t used);

  DeviceMemory& device_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::map<StreamHandle, Bins> cached_;  // pool stream -> its free blocks
  std::vector<Pending> pending_;
  AllocatorStats stats_;
  std::int64_t device_peak_used_ = 0;
};

}  // namespace gpipe::exec::cuda
