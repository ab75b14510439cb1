#include "exec/cpu/ops/rope.hpp"

#include <cassert>
#include <cmath>
#include <vector>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

// cos and sin of every (pos, i) angle, [seq, head_dim/2] each. The angles are
// computed in double and rounded once to float, so forward and backward rotate
// by exactly the same table and rope_backward(rope_forward(x)) is x to within
// the float rounding of the products. Built per call (seq * head_dim/2 pairs,
// against batch * seq * heads * head_dim elements rotated): small, and it keeps
// the kernel free of state; a layer that rotates q and k builds it twice.
struct RopeTable {
  std::vector<float> cos;
  std::vector<float> sin;
};

RopeTable make_table(const RopeShape& shape) {
  const std::int64_t half = shape.head_dim / 2;
  RopeTable table{std::vector<float>(static_cast<std::size_t>(shape.seq * half)),
                  std::vector<float>(static_cast<std::size_t>(shape.seq * half))};
  std::vector<double> inv_freq(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i) {
    inv_freq[static_cast<std::size_t>(i)] =
        std::pow(shape.theta, -2.0 * static_cast<double>(i) / static_cast<double>(shape.head_dim));
  }
  // The library calls are the cost here, tens of elementwise operations each,
  // so positions split over the team in smaller parts than an elementwise pass
  // (each entry is computed by one part, from the same inputs: any split agrees).
  constexpr std::int64_t kMinAnglesPerPart = 4096;
  const auto fill = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t pos = begin; pos < end; ++pos) {
      for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t at = shape.positions == nullptr ? pos : shape.positions[pos];
        const double angle = static_cast<double>(at) * inv_freq[static_cast<std::size_t>(i)];
        const auto k = static_cast<std::size_t>(pos * half + i);
        table.cos[k] = static_cast<float>(std::cos(angle));
        table.sin[k] = static_cast<float>(std::sin(angle));
      }
    }
  };
  for_ranges(shape.seq, parts_for(shape.seq * half, kMinAnglesPerPart), fill);
  return table;
}

// (a, b) -> (a cos - b sin, a sin + b cos) over one token's heads; `direction`
// is +1 (forward) or -1 (backward: sin negated, the inverse rotation).
GPIPE_VECTOR_CLONES void rotate_tokens(std::int64_t tokens, std::int64_t first_token,
                                       const RopeShape& shape, const RopeTable& table,
                                       float direction, float* x) {
  const std::int64_t half = shape.head_dim / 2;
  for (std::int64_t t = first_token; t < first_token + tokens; ++t) {
    const std::int64_t pos = t % shape.seq;
    const float* c = table.cos.data() + pos * half;
    const float* s = table.sin.data() + pos * half;
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      float* head = x + t * shape.row_stride + h * shape.head_dim;
#pragma omp simd
      for (std::int64_t i = 0; i < half; ++i) {
        const float a = head[2 * i];
        const float b = head[2 * i + 1];
        const float sn = direction * s[i];
        head[2 * i] = a * c[i] - b * sn;
        head[2 * i + 1] = a * sn + b * c[i];
      }
    }
  }
}

void rope_apply(const RopeShape& shape, float direction, float* x) {
  assert(shape.head_dim % 2 == 0);
  if (shape.batch <= 0 || shape.seq <= 0 || shape.heads <= 0 || shape.head_dim <= 0) return;
  const RopeTable table = make_table(shape);
  // Tokens are independent: split them (batch * seq of them) over the team.
  for_element_ranges(shape.batch * shape.seq, shape.heads * shape.head_dim,
                     [&](std::int64_t begin, std::int64_t end) {
                       rotate_tokens(end - begin, begin, shape, table, direction, x);
                     });
}

}  // namespace

void rope_forward(const RopeShape& shape, float* x) { rope_apply(shape, 1.0F, x); }

void rope_backward(const RopeShape& shape, float* dx) { rope_apply(shape, -1.0F, dx); }

}  // namespace gpipe::exec::cpu
