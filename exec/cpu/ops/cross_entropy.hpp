// Softmax cross-entropy over rows of logits, forward and backward. The
// forward turns the logits into probabilities in place (the lm_head stashes
// them, as models/model.hpp counts) and takes each row's loss from the logits
// (log-sum-exp), which stays finite where log(probability) would underflow.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// logits[rows,vocab] become softmax probabilities; loss[r] = -log p[r][target[r]].
// Every target must lie in [0, vocab).
void cross_entropy_forward(std::int64_t rows, std::int64_t vocab, float* logits,
                           const std::int32_t* targets, float* loss);

// dlogits[r] = (p[r] - onehot(target[r])) * scale[r], where scale[r] is
// d(total)/d(loss[r]). dlogits may be probs itself (overwritten in place).
void cross_entropy_backward(std::int64_t rows, std::int64_t vocab, const float* probs,
                            const std::int32_t* targets, const float* scale, float* dlogits);

}  // namespace gpipe::exec::cpu
