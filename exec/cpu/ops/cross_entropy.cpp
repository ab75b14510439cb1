#include "exec/cpu/ops/cross_entropy.hpp"

#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

GPIPE_VECTOR_CLONES void cross_entropy_forward_rows(std::int64_t rows, std::int64_t vocab,
                                               float* logits, const std::int32_t* targets,
                                               float* loss) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = logits + r * vocab;
    const float max = max_of(vocab, row);
    const float target_logit = row[targets[r]];
    const float sum = exp_shifted_sum(vocab, row, max);
    loss[r] = std::log(sum) + max - target_logit;
    const float inv = 1.0F / sum;
#pragma omp simd
    for (std::int64_t j = 0; j < vocab; ++j) row[j] *= inv;
  }
}

GPIPE_VECTOR_CLONES void cross_entropy_backward_rows(std::int64_t rows, std::int64_t vocab,
                                                const float* probs, const std::int32_t* targets,
                                                const float* scale, float* dlogits) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* p = probs + r * vocab;
    float* d = dlogits + r * vocab;
#pragma omp simd
    for (std::int64_t j = 0; j < vocab; ++j) d[j] = p[j] * scale[r];
    d[targets[r]] -= scale[r];
  }
}

}  // namespace

void cross_entropy_forward(std::int64_t rows, std::int64_t vocab, float* logits,
                           const std::int32_t* targets, float* loss) {
  for_element_ranges(rows, vocab, [&](std::int64_t begin, std::int64_t end) {
    cross_entropy_forward_rows(end - begin, vocab, logits + begin * vocab, targets + begin, loss + begin);
  });
}

void cross_entropy_backward(std::int64_t rows, std::int64_t vocab, const float* probs,
                            const std::int32_t* targets, const float* scale, float* dlogits) {
  for_element_ranges(rows, vocab, [&](std::int64_t begin, std::int64_t end) {
    cross_entropy_backward_rows(end - begin, vocab, probs + begin * vocab, targets + begin, scale + begin,
                                dlogits + begin * vocab);
  });
}

}  // namespace gpipe::exec::cpu
