// What the GPU kernel tests share: a device buffer (RAII, upload and
// download), seeded random inputs, and the comparison that prints max abs and
// max rel error against the CPU reference and asserts a stated tolerance
// (|got - want| <= atol + rtol |want| for every element), as llm.c's tests do.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"

namespace gpipe::exec::cuda::test {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    GPIPE_CUDA_CHECK(cudaMalloc(&data_, std::max<std::size_t>(count, 1) * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void upload(const std::vector<T>& host) {
    GPIPE_CUDA_CHECK(
        cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  [[nodiscard]] std::vector<T> download() const {
    std::vector<T> host(count_);
    GPIPE_CUDA_CHECK(cudaDeviceSynchronize());  // the kernels ran on the default stream
    GPIPE_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  [[nodiscard]] T* get() { return data_; }
  [[nodiscard]] const T* get() const { return data_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

[[nodiscard]] inline std::vector<float> random_floats(std::size_t count, std::uint32_t seed,
                                                      float low = -1.0F, float high = 1.0F) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

[[nodiscard]] inline std::vector<std::int32_t> random_ids(std::size_t count, std::int32_t bound,
                                                          std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, bound - 1);
  std::vector<std::int32_t> ids(count);
  for (std::int32_t& id : ids) id = dist(rng);
  return ids;
}

struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
};

// Prints "<name>: max abs e, max rel e over n" and expects every element within tolerance.
inline void expect_close(const std::string& name, const std::vector<float>& got,
                         const std::vector<float>& want, Tolerance tol) {
  ASSERT_EQ(got.size(), want.size()) << name;
  double max_abs = 0.0;
  double max_rel = 0.0;
  std::size_t bad = 0;
  std::size_t first_bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    const double rel = err / std::max(std::abs(static_cast<double>(want[i])), 1e-30);
    max_abs = std::max(max_abs, err);
    if (want[i] != 0.0F) max_rel = std::max(max_rel, rel);
    if (!(err <= tol.atol + tol.rtol * std::abs(want[i]))) {  // NaN counts as bad
      if (bad++ == 0) first_bad = i;
    }
  }
  std::printf("%-28s max abs %.3e  max rel %.3e  over %zu (atol %.1e, rtol %.1e)\n", name.c_str(),
              max_abs, max_rel, got.size(), tol.atol, tol.rtol);
  EXPECT_EQ(bad, 0U) << name << ": first mismatch at " << first_bad << ": got " << got[first_bad]
                     << ", want " << want[first_bad];
}

// The row-wise kernels' shapes (the norms'): widths below, at and above a
// warp, and rows not a multiple of the block's 8.
inline constexpr std::int64_t kRows = 37;
inline constexpr std::int64_t kWidths[] = {8, 32, 96};

// The fp32 tolerance of kernels whose summation order differs from the CPU's.
inline constexpr Tolerance kFp32{1e-5, 1e-5};
// Bitwise equality (elementwise arithmetic done in the CPU's order).
inline constexpr Tolerance kExact{0.0, 0.0};

}  // namespace gpipe::exec::cuda::test
