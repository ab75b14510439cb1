// fp32 <-> bf16: the device conversions (round to nearest even, as
// __float2bfloat16_rn) and the same rounding on the host, so tests and the
// future loaders can prepare bf16 operands without a GPU.
#pragma once

#include <bit>
#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda {

// Round to nearest, ties to even; NaN stays a (quiet) NaN, infinities stay.
[[nodiscard]] constexpr Bf16 to_bf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7F800000U) == 0x7F800000U && (bits & 0x007FFFFFU) != 0) {
    return static_cast<Bf16>((bits >> 16) | 0x0040U);
  }
  const std::uint32_t lsb = (bits >> 16) & 1U;
  return static_cast<Bf16>((bits + 0x7FFFU + lsb) >> 16);
}

[[nodiscard]] constexpr float from_bf16(Bf16 value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

namespace kernels {

// dst[i] = bf16(src[i]) (round to nearest even), on the device.
void f32_to_bf16(std::int64_t count, const float* src, Bf16* dst, StreamHandle stream);
// dst[i] = float(src[i]) (exact), on the device.
void bf16_to_f32(std::int64_t count, const Bf16* src, float* dst, StreamHandle stream);

}  // namespace kernels
}  // namespace gpipe::exec::cuda
