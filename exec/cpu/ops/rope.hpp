// Rotary position embedding (RoPE) in Meta Llama's interleaved form: within
// each head of width d, the pair (x[2i], x[2i+1]) is read as a complex number
// and rotated by the angle pos * theta^(-2i/d), i in [0, d/2), where pos is the
// token's index in its sequence (0 .. seq-1). Applied in place to q and k
// before attention; the backward rotates the gradient back.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// Where the heads to rotate lie: sample n, token s, head h starts at
//   x + (n * seq + s) * row_stride + h * head_dim,
// so q and k can be rotated inside a fused [b, S, 3H] QKV buffer (row_stride
// 3H, x at q's or k's first column). head_dim must be even (the layer checks).
struct RopeShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;  // the number of heads to rotate
  std::int64_t head_dim = 0;
  std::int64_t row_stride = 0;  // floats between consecutive tokens
  double theta = 10000.0;
  // Each of a sample's seq tokens' place in its sequence (context
  // parallelism: a GPU's tokens are two chunks of it); null: 0 .. seq-1.
  const std::int64_t* positions = nullptr;
};

// Rotates every pair by +angle, in place.
void rope_forward(const RopeShape& shape, float* x);

// The gradient of a rotation is its transpose: rotates every pair of dx by
// -angle, in place. Uses the same cos/sin values as rope_forward.
void rope_backward(const RopeShape& shape, float* dx);

}  // namespace gpipe::exec::cpu
