#include "exec/cpu/ops/modulation.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

// The forwards are elementwise: split over the rows (tokens of all samples).
// Row r belongs to sample r / tokens.
GPIPE_VECTOR_CLONES void modulate_rows(std::int64_t first_row, std::int64_t rows,
                                       std::int64_t tokens, std::int64_t hidden, const float* xhat,
                                       const float* shift, const float* scale,
                                       std::int64_t mod_stride, float* y) {
  for (std::int64_t r = first_row; r < first_row + rows; ++r) {
    const std::int64_t n = r / tokens;
    const float* sh = shift + n * mod_stride;
    const float* sc = scale + n * mod_stride;
    const float* xr = xhat + r * hidden;
    float* yr = y + r * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) yr[j] = xr[j] * (1.0F + sc[j]) + sh[j];
  }
}

GPIPE_VECTOR_CLONES void gated_residual_rows(std::int64_t first_row, std::int64_t rows,
                                             std::int64_t tokens, std::int64_t hidden,
                                             const float* x, const float* gate,
                                             std::int64_t mod_stride, const float* f, float* y) {
  for (std::int64_t r = first_row; r < first_row + rows; ++r) {
    const float* g = gate + (r / tokens) * mod_stride;
    const float* xr = x + r * hidden;
    const float* fr = f + r * hidden;
    float* yr = y + r * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < hidden; ++j) yr[j] = xr[j] + g[j] * fr[j];
  }
}

// The backwards sum over tokens into one vector per sample. So that each sum
// belongs to one part (and comes out the same at any team size), they split
// the (sample, column) pairs, batch * hidden of them, into ranges, as
// add_column_sums splits columns; every part walks all tokens of its columns
// in order. body(n, j_begin, j_end) gets each range's piece within sample n.
template <class Body>
void for_sample_columns(std::int64_t batch, std::int64_t tokens, std::int64_t hidden, Body&& body) {
  if (batch <= 0 || hidden <= 0) return;
  for_element_ranges(batch * hidden, tokens, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t n = begin / hidden; n * hidden < end; ++n) {
      const std::int64_t j_begin = std::max(begin, n * hidden) - n * hidden;
      const std::int64_t j_end = std::min(end, (n + 1) * hidden) - n * hidden;
      body(n, j_begin, j_end);
    }
  });
}

// Columns [0, cols) of one sample's tokens, rows `hidden` apart; the strided
// vectors already point at the sample and the band.
GPIPE_VECTOR_CLONES void modulate_backward_band(std::int64_t tokens, std::int64_t cols,
                                                std::int64_t hidden, const float* xhat,
                                                const float* scale, const float* dy, float* dxhat,
                                                float* dshift, float* dscale) {
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* xr = xhat + t * hidden;
    const float* dyr = dy + t * hidden;
    float* dxr = dxhat + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) {
      const float d = dyr[j];
      const float xh = xr[j];
      dshift[j] += d;
      dscale[j] += d * xh;
      dxr[j] = d * (1.0F + scale[j]);
    }
  }
}

GPIPE_VECTOR_CLONES void gated_residual_backward_band(std::int64_t tokens, std::int64_t cols,
                                                      std::int64_t hidden, const float* f,
                                                      const float* gate, const float* dy, float* df,
                                                      float* dgate) {
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* fr = f + t * hidden;
    const float* dyr = dy + t * hidden;
    float* dfr = df + t * hidden;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) {
      const float d = dyr[j];
      dgate[j] += d * fr[j];
      dfr[j] = d * gate[j];
    }
  }
}

}  // namespace

void modulate_forward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                      const float* xhat, const float* shift, const float* scale,
                      std::int64_t mod_stride, float* y) {
  for_element_ranges(batch * tokens, hidden, [&](std::int64_t begin, std::int64_t end) {
    modulate_rows(begin, end - begin, tokens, hidden, xhat, shift, scale, mod_stride, y);
  });
}

void modulate_backward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                       const float* xhat, const float* scale, std::int64_t mod_stride,
                       const float* dy, float* dxhat, float* dshift, float* dscale) {
  for_sample_columns(batch, tokens, hidden, [&](std::int64_t n, std::int64_t j0, std::int64_t j1) {
    const std::int64_t at = n * tokens * hidden + j0;  // token 0 of sample n, column j0
    const std::int64_t mod = n * mod_stride + j0;
    modulate_backward_band(tokens, j1 - j0, hidden, xhat + at, scale + mod, dy + at, dxhat + at,
                           dshift + mod, dscale + mod);
  });
}

void gated_residual_forward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                            const float* x, const float* gate, std::int64_t mod_stride,
                            const float* f, float* y) {
  for_element_ranges(batch * tokens, hidden, [&](std::int64_t begin, std::int64_t end) {
    gated_residual_rows(begin, end - begin, tokens, hidden, x, gate, mod_stride, f, y);
  });
}

void gated_residual_backward(std::int64_t batch, std::int64_t tokens, std::int64_t hidden,
                             const float* f, const float* gate, std::int64_t mod_stride,
                             const float* dy, float* df, float* dgate) {
  for_sample_columns(batch, tokens, hidden, [&](std::int64_t n, std::int64_t j0, std::int64_t j1) {
    const std::int64_t at = n * tokens * hidden + j0;
    const std::int64_t mod = n * mod_stride + j0;
    gated_residual_backward_band(tokens, j1 - j0, hidden, f + at, gate + mod, dy + at, df + at,
                                 dgate + mod);
  });
}

void timestep_embedding(std::int64_t count, const float* t, std::int64_t dim, double max_period,
                        float* out) {
  assert(dim % 2 == 0);
  const std::int64_t half = dim / 2;
  const double log_period = std::log(max_period);
  // [batch] timesteps into [batch, dim]: a few thousand library calls, on the
  // calling thread.
  for (std::int64_t n = 0; n < count; ++n) {
    float* row = out + n * dim;
    for (std::int64_t i = 0; i < half; ++i) {
      const double freq =
          std::exp(-log_period * static_cast<double>(i) / static_cast<double>(half));
      const double arg = static_cast<double>(t[n]) * freq;
      row[i] = static_cast<float>(std::cos(arg));
      row[half + i] = static_cast<float>(std::sin(arg));
    }
  }
}

}  // namespace gpipe::exec::cpu
