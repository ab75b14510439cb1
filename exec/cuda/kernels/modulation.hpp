// DiT's adaLN-Zero pieces on the device, the contract of
// exec/cpu/ops/modulation.hpp: over tokens x[batch, tokens, hidden] with one
// vector per sample (sample n's at p + n * mod_stride, slices of the
// conditioning MLP's [batch, 6 hidden] output), the modulation
// y = x_hat (1 + scale) + shift and the gated residual y = x + gate * f,
// forward and backward. The backwards ADD the per-sample sums over tokens
// into the strided slices of dc (one deterministic column reduction per
// sample), then overwrite the elementwise gradient, so that gradient may take
// its input's storage. Device pointers.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

struct ModulationShape {
  std::int64_t batch = 0;
  std::int64_t tokens = 0;
  std::int64_t hidden = 0;
  std::int64_t mod_stride = 0;  // floats between consecutive samples' vectors
};

// y = x_hat * (1 + scale[n]) + shift[n]; y may be x_hat.
void modulate_forward(const ModulationShape& shape, const float* xhat, const float* shift,
                      const float* scale, float* y, StreamHandle stream);

// dshift[n] += sum_t dy, dscale[n] += sum_t dy * x_hat, then
// dxhat = dy * (1 + scale[n]) (dxhat may be dy or x_hat).
void modulate_backward(const ModulationShape& shape, const float* xhat, const float* scale,
                       const float* dy, float* dxhat, float* dshift, float* dscale,
                       StreamHandle stream);

// y = x + gate[n] * f; y may be x or f.
void gated_residual_forward(const ModulationShape& shape, const float* x, const float* gate,
                            const float* f, float* y, StreamHandle stream);

// dgate[n] += sum_t dy * f, then df = dy * gate[n] (df may be dy or f). The
// residual's dx is dy itself: the caller passes it on.
void gated_residual_backward(const ModulationShape& shape, const float* f, const float* gate,
                             const float* dy, float* df, float* dgate, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
