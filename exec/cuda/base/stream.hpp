// Owned CUDA streams and events. A Stream is non-blocking (it never waits on
// the legacy default stream, which would serialise the pipeline's stages); an
// Event marks a point in a stream, orders another stream after it, and times
// the work between two of them on the device's clock.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gpipe::exec::cuda {

class Event;

class Stream {
 public:
  // A new non-blocking stream on `device`.
  explicit Stream(int device = 0);
  // Takes ownership of a stream created elsewhere (a green context's), destroyed with cudaStreamDestroy.
  [[nodiscard]] static Stream adopt(cudaStream_t handle, int device);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  [[nodiscard]] cudaStream_t get() const { return handle_; }
  [[nodiscard]] int device() const { return device_; }
  // Later work on this stream waits until `event` has happened (no host wait).
  void wait(const Event& event);
  // Blocks the calling thread until the stream's work is done.
  void synchronize() const;

 private:
  Stream(cudaStream_t handle, int device) : handle_(handle), device_(device) {}
  void destroy() noexcept;

  cudaStream_t handle_ = nullptr;
  int device_ = 0;
};

class Event {
 public:
  // With timing on it can be used in elapsed_ns; without, it is cheaper for ordering only.
  explicit Event(bool timing = true);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  [[nodiscard]] cudaEvent_t get() const { return handle_; }
  void record(const Stream& stream);
  void synchronize() const;
  // True once the work recorded before it has finished (never blocks).
  [[nodiscard]] bool done() const;

 private:
  void destroy() noexcept;
  cudaEvent_t handle_ = nullptr;
};

// Device time from `start` to `end`, both recorded with timing and completed
// (synchronise on `end` first). CUDA measures in milliseconds with about
// 0.5 us resolution; the result is in integer nanoseconds like the rest of gpipe.
[[nodiscard]] std::int64_t elapsed_ns(const Event& start, const Event& end);

}  // namespace gpipe::exec::cuda
