#include "exec/cuda/base/stream.hpp"

#include <cmath>
#include <utility>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"

namespace gpipe::exec::cuda {

Stream::Stream(int device) : device_(device) {
  use_device(device);
  GPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
}

Stream Stream::adopt(cudaStream_t handle, int device) { return Stream(handle, device); }

Stream::~Stream() { destroy(); }

Stream::Stream(Stream&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    destroy();
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Stream::destroy() noexcept {
  // Work still queued completes; the handle is freed when it has (CUDA's documented behaviour).
  if (handle_ != nullptr) (void)cudaStreamDestroy(handle_);
  handle_ = nullptr;
}

void Stream::wait(const Event& event) { GPIPE_CUDA_CHECK(cudaStreamWaitEvent(handle_, event.get(), 0)); }

void Stream::synchronize() const { GPIPE_CUDA_CHECK(cudaStreamSynchronize(handle_)); }

Event::Event(bool timing) {
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&handle_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() { destroy(); }

Event::Event(Event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    destroy();
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Event::destroy() noexcept {
  if (handle_ != nullptr) (void)cudaEventDestroy(handle_);
  handle_ = nullptr;
}

void Event::record(const Stream& stream) { GPIPE_CUDA_CHECK(cudaEventRecord(handle_, stream.get())); }

void Event::synchronize() const { GPIPE_CUDA_CHECK(cudaEventSynchronize(handle_)); }

bool Event::done() const {
  const cudaError_t status = cudaEventQuery(handle_);
  if (status == cudaErrorNotReady) return false;
  GPIPE_CUDA_CHECK(status);
  return true;
}

std::int64_t elapsed_ns(const Event& start, const Event& end) {
  float milliseconds = 0.0F;
  GPIPE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), end.get()));
  return std::llround(static_cast<double>(milliseconds) * 1e6);
}

}  // namespace gpipe::exec::cuda
