// SiLU and Llama's SwiGLU gate h = silu(gate) * up on the device, forward and
// backward, the contract of exec/cpu/ops/swiglu.hpp: sigmoid from e^-|v| (no
// overflow, no cancellation), its tail cut to 0 below -87 as the CPU's
// (which clamps its exponential there), NaN kept. Elementwise; the
// gradients may take their inputs' storage (each element is read before it
// is written). Device pointers.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// h = silu(gate) * up over [count].
void swiglu_forward(std::int64_t count, const float* gate, const float* up, float* h,
                    StreamHandle stream);
// dgate = dh * up * silu'(gate), dup = dh * silu(gate), overwritten; dgate may
// be gate and dup may be up.
void swiglu_backward(std::int64_t count, const float* gate, const float* up, const float* dh,
                     float* dgate, float* dup, StreamHandle stream);

// y = silu(x) over [count].
void silu_forward(std::int64_t count, const float* x, float* y, StreamHandle stream);
// dx = dy * silu'(x), overwritten; dx may be x or dy.
void silu_backward(std::int64_t count, const float* x, const float* dy, float* dx,
                   StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
