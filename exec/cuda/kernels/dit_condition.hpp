// DiT's conditioning inputs on the device (exec/cpu/layers/dit_embed.cpp): the
// sinusoidal timestep features, as exec/cpu/ops/modulation.hpp's
// timestep_embedding (in double, stored as float), and the class-label rows,
// gathered and scatter-added. The timestep and the label of sample n are
// floats inside its input row, so each is read at t + n * stride.
//
// Labels are not range-checked here: they live on the device, and checking
// them would wait for the stream (exec/cuda/kernels/embedding.hpp says the
// same of token ids). Whoever makes them on the host checks them there, as
// the CPU layer does (an integer in [0, classes]).
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// out[n] = [cos(t_n f_i) for i < half, sin(t_n f_i) for i < half], f_i =
// exp(-ln(max_period) i / half), half = dim / 2 (dim even), t_n = t[n * t_stride].
void timestep_embedding(std::int64_t count, const float* t, std::int64_t t_stride,
                        std::int64_t dim, double max_period, float* out, StreamHandle stream);

// Where the labels are and where their rows go: label n at labels[n * label_stride],
// row n of rows at rows + n * row_stride, `hidden` floats each.
struct LabelRows {
  std::int64_t batch = 0;
  std::int64_t hidden = 0;
  std::int64_t label_stride = 0;
  std::int64_t row_stride = 0;
};

// rows[n] = c[n] + table[label_n] (c packed [batch, hidden]).
void label_rows_forward(const LabelRows& shape, const float* labels, const float* table,
                        const float* c, float* rows, StreamHandle stream);

// dtable[label_n] += drows[n], samples in order (one thread per column, so a
// label two samples share sums in the CPU's order, without atomics).
void label_rows_backward(const LabelRows& shape, const float* labels, const float* drows,
                         float* dtable, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
