// The rotary position embedding on the device, the contract of
// exec/cpu/ops/rope.hpp (Meta Llama's interleaved pairs (x[2i], x[2i+1]) of each
// head rotated by pos * theta^(-2i/d), in place, with the same RopeShape so
// that q and k rotate inside a packed qkv row). The angles are formed as the
// CPU forms its table: inverse frequency, angle, cos and sin in double, each
// rounded once to float, so both backends rotate by the same values (to the
// last bit of the device's double pow/cos/sin). Device pointers.
#pragma once

#include <cstdint>

#include "exec/cpu/ops/rope.hpp"
#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

using cpu::RopeShape;

// Throws std::invalid_argument on a negative size, an odd head_dim or a row
// stride shorter than the heads it holds.
void check_rope_shape(const RopeShape& shape);

// One thread per (token, pair i): it computes the angle's cos and sin once
// and rotates that pair in every head of the token.
[[nodiscard]] inline std::int64_t rope_threads(const RopeShape& shape) {
  return shape.batch * shape.seq * (shape.head_dim / 2);
}

// Rotates every pair by +angle, in place.
void rope_forward(const RopeShape& shape, float* x, StreamHandle stream);
// Rotates every pair of dx by -angle (the transpose), in place.
void rope_backward(const RopeShape& shape, float* dx, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
