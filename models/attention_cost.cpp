#include "models/attention_cost.hpp"

namespace gpipe::models {

AttentionFlops attention_flops(std::int64_t seq, std::int64_t hidden, bool causal,
                               Attention attention) {
  const double s = static_cast<double>(seq);
  const bool triangle = causal && attention == Attention::flash;
  const double entries = triangle ? s * (s + 1.0) / 2.0 : s * s;
  const double product = 2.0 * entries * static_cast<double>(hidden);
  const double backward_products = attention == Attention::flash ? 5.0 : 4.0;
  return {.forward = 2.0 * product, .backward = backward_products * product};
}

}  // namespace gpipe::models
