// Where device bytes come from: the seam between the caching allocator and
// the GPU. CudaDeviceMemory calls cudaMalloc / cudaFree / cudaMemGetInfo and
// records CUDA events; FakeDeviceMemory hands out host memory, counts every
// call and completes its "events" when a test says so, so the allocator's
// accounting and its deferred (stream-ordered) reuse are tested in CI on a
// machine without a GPU.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "exec/cuda/kernels/launch.hpp"

struct CUevent_st;  // the runtime's opaque event; cudaEvent_t is CUevent_st*

namespace gpipe::exec::cuda {

// The device's own view of its memory (cudaMemGetInfo): every process and
// library on it counts, not only this allocator.
struct DeviceUsage {
  std::int64_t used_bytes = 0;
  std::int64_t total_bytes = 0;
};

// Names one recorded event of a DeviceMemory; 0 is never a valid token.
using EventToken = std::uint64_t;

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` of device memory; throws RunError naming the request when the device has none left.
  [[nodiscard]] virtual void* allocate(std::int64_t bytes) = 0;
  virtual void free(void* pointer) = 0;
  [[nodiscard]] virtual DeviceUsage usage() const = 0;

  // Marks the work queued on `stream` so far (nullptr: the legacy default stream). The
  // token stays valid until release_event. Fast (no device synchronisation): the
  // allocator calls these under its lock.
  [[nodiscard]] virtual EventToken record_event(StreamHandle stream) = 0;
  // True once that work has finished. Never blocks.
  [[nodiscard]] virtual bool event_done(EventToken event) = 0;
  // The token is not used again; its event may be recycled for a later record_event.
  virtual void release_event(EventToken event) = 0;
};

// The real device: cudaMalloc on `device` (made the thread's device when it is
// not, never resetting a green context the thread is bound to). Events are
// created without timing (cheaper, ordering only), one per record in the
// calling thread's context (an event must be recorded on a stream of its own
// context, and the ranks' threads run in different green contexts), and
// destroyed on release. Thread-safe.
class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(int device = 0) : device_(device) {}
  // Destroys the events of tokens still held.
  ~CudaDeviceMemory() override;
  CudaDeviceMemory(const CudaDeviceMemory&) = delete;
  CudaDeviceMemory& operator=(const CudaDeviceMemory&) = delete;

  [[nodiscard]] void* allocate(std::int64_t bytes) override;
  void free(void* pointer) override;
  [[nodiscard]] DeviceUsage usage() const override;

  [[nodiscard]] EventToken record_event(StreamHandle stream) override;
  // cudaEventQuery: cudaErrorNotReady is "not done", any other error a RunError.
  [[nodiscard]] bool event_done(EventToken event) override;
  void release_event(EventToken event) override;

 private:
  using EventHandle = CUevent_st*;  // cudaEvent_t, without the CUDA headers
  [[nodiscard]] EventHandle event_of(EventToken event) const;  // the caller holds mutex_

  int device_;
  mutable std::mutex mutex_;
  EventToken next_token_ = 1;
  std::unordered_map<EventToken, EventHandle> recorded_;
};

// Host memory posing as a device of `capacity_bytes`: allocations beyond it
// throw RunError like a full GPU. Thread-safe. usage().used_bytes is the sum
// of live allocations (a real device adds its context and other processes).
// Events are numbered in recording order and stay "not done" until
// complete_events(), the test's stand-in for the streams finishing their work.
class FakeDeviceMemory final : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(std::int64_t capacity_bytes = std::int64_t{1} << 30)
      : capacity_bytes_(capacity_bytes) {}
  ~FakeDeviceMemory() override;
  FakeDeviceMemory(const FakeDeviceMemory&) = delete;
  FakeDeviceMemory& operator=(const FakeDeviceMemory&) = delete;

  [[nodiscard]] void* allocate(std::int64_t bytes) override;
  // Throws std::logic_error for a pointer it did not hand out (a double free in the allocator).
  void free(void* pointer) override;
  [[nodiscard]] DeviceUsage usage() const override;

  [[nodiscard]] EventToken record_event(StreamHandle stream) override;
  // event_done and release_event throw std::logic_error for a token not recorded or already
  // released (a bug of the allocator's).
  [[nodiscard]] bool event_done(EventToken event) override;
  void release_event(EventToken event) override;

  // Every event recorded so far is done from now on.
  void complete_events();
  // Events recorded and not yet done (released or not).
  [[nodiscard]] std::int64_t pending_events() const;
  // Events recorded and not yet released: what the allocator still holds.
  [[nodiscard]] std::int64_t held_events() const;
  [[nodiscard]] std::int64_t record_calls() const;

  [[nodiscard]] std::int64_t allocate_calls() const;
  [[nodiscard]] std::int64_t free_calls() const;
  [[nodiscard]] std::int64_t live_blocks() const;

 private:
  mutable std::mutex mutex_;
  std::int64_t capacity_bytes_;
  std::int64_t used_bytes_ = 0;
  std::int64_t allocate_calls_ = 0;
  std::int64_t free_calls_ = 0;
  std::unordered_map<void*, std::int64_t> live_;  // pointer -> bytes
  EventToken last_recorded_ = 0;                   // tokens are 1, 2, ... in recording order
  EventToken last_completed_ = 0;                  // every token up to this one is done
  std::unordered_set<EventToken> held_;
};

}  // namespace gpipe::exec::cuda
