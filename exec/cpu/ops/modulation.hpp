// DiT's adaLN-Zero pieces over tokens x[batch, tokens, hidden] with one
// vector per sample: the modulation y = x_hat (1 + scale) + shift after a
// LayerNorm without affine, the gated residual y = x + gate * f, and the
// sinusoidal timestep embedding that feeds the conditioning.
//
// shift, scale and gate are slices of the conditioning MLP's output
// c[batch, 6 hidden] (shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp,
// gate_mlp): sample n's vector is at p + n * mod_stride (mod_stride = 6 hidden
// there; hidden for a packed [batch, hidden]). Their gradients are written
// with the same stride, into the slices of dc.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// y = x_hat * (1 + scale[n]) + shift[n] for every token of sample n; y may be
// x_hat.
void modulate_forward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                      const float* xhat, const float* shift, const float* scale,
                      std::int64_t mod_stride, float* y);

// dxhat = dy * (1 + scale[n]) (overwritten; dxhat may be dy or x_hat);
// dshift[n] += sum over tokens of dy, dscale[n] += sum over tokens of
// dy * x_hat (ADDED, strided by mod_stride).
void modulate_backward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                       const float* xhat, const float* scale, std::int64_t mod_stride,
                       const float* dy, float* dxhat, float* dshift, float* dscale);

// y = x + gate[n] * f for every token of sample n; y may be x or f.
void gated_residual_forward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                            const float* x, const float* gate, std::int64_t mod_stride,
                            const float* f, float* y);

// df = dy * gate[n] (overwritten; df may be dy or f); dgate[n] += sum over
// tokens of dy * f (ADDED, strided by mod_stride). The residual's dx is dy
// itself: the caller passes it on.
void gated_residual_backward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                             const float* f, const float* gate, std::int64_t mod_stride,
                             const float* dy, float* df, float* dgate);

// DiT's sinusoidal embedding of the timesteps t[count] into out[count, dim]
// (dim even): with half = dim / 2 and freq_i = exp(-ln(max_period) i / half),
// out[n] = [cos(t[n] freq_i) for i < half, sin(t[n] freq_i) for i < half].
// Computed in double, stored as float.
void timestep_embedding(std::int64_t count, const float* t, std::int64_t dim, double max_period,
                        float* out);

}  // namespace gpipe::exec::cpu
