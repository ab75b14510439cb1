// SiLU (x * sigmoid(x)) and Llama's SwiGLU feed-forward gate
// h = silu(gate) * up, forward and backward, elementwise. silu alone is DiT's
// activation in front of the adaLN modulation, SiLU(c).
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// h = silu(gate) * up over [count].
void swiglu_forward(std::int64_t count, const float* gate, const float* up, float* h);

// dgate = dh * up * silu'(gate), dup = dh * silu(gate), overwritten. dgate may
// be gate and dup may be up (each element of gate, up and dh is read before
// either output element is written), so a backward can reuse the stashed
// halves' storage for their gradients.
void swiglu_backward(std::int64_t count, const float* gate, const float* up, const float* dh,
                     float* dgate, float* dup);

// y = silu(x) over [count].
void silu_forward(std::int64_t count, const float* x, float* y);

// dx = dy * silu'(x), overwritten; dx may be x or dy (each element is read
// before it is written).
void silu_backward(std::int64_t count, const float* x, const float* dy, float* dx);

}  // namespace gpipe::exec::cpu
