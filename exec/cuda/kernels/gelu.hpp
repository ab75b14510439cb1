// GELU (GPT-2's tanh approximation) on the device, the same contract as
// exec/cpu/ops/gelu.hpp: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// and dx = dy * gelu'(x) (overwritten). Device pointers.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

void gelu_forward(std::int64_t count, const float* x, float* y, StreamHandle stream);
void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
