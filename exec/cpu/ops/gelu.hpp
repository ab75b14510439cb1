// GELU, GPT-2's tanh approximation:
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// forward and backward, elementwise.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

void gelu_forward(std::int64_t count, const float* x, float* y);

// dx = dy * gelu'(x), overwritten; dx may be x or dy (each element is read
// before it is written), so a backward can reuse either's storage.
void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx);

}  // namespace gpipe::exec::cpu
