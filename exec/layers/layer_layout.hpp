// Where each layer kind keeps its parameters and its stash: the positions in
// Layer::parameters() and in a Stash's tensors, shared by the CPU layers and
// their CUDA twins so that both hold the same tensors in the same order (the
// stash order is models/model.hpp's; the CUDA layers' weights are uploaded
// from the CPU layers' by position).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpipe::exec::layout {

namespace mlp_block {
enum Param : std::size_t { kGamma, kBeta, kW1, kC1, kW2, kC2 };
// x, LN output, LN (mean, rstd), pre-GELU, GELU output.
enum Kept : std::size_t { kX, kNormed, kStats, kPreGelu, kGelu, kKeptCount };
}  // namespace mlp_block

namespace mse_loss {
enum Kept : std::size_t { kX, kTarget, kKeptCount };
}  // namespace mse_loss

namespace embedding {
enum Param : std::size_t { kTok, kPos };
enum Kept : std::size_t { kIds, kKeptCount };
}  // namespace embedding

namespace transformer_block {
enum Param : std::size_t {
  kGamma1, kBeta1, kWqkv, kBqkv, kWo, kBo, kGamma2, kBeta2, kW1, kB1, kW2, kB2
};
// x, LN1 out, qkv, P, attention out, a, LN2 out, pre-GELU, GELU out, LN1 and
// LN2 (mean, rstd).
enum Kept : std::size_t {
  kX, kNormed1, kQkv, kProbs, kAttn, kA, kNormed2, kPreGelu, kGelu, kStats1, kStats2, kKeptCount
};
// The shapes of the stash after x (kNormed1 .. kStats2, in order) for b
// samples of seq s, hidden h, a heads and MLP width f.
[[nodiscard]] inline std::vector<std::vector<std::int64_t>> stash_shapes_after_input(
    std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t a, std::int64_t f) {
  return {{b, s, h}, {b, s, 3 * h}, {b, a, s, s}, {b, s, h}, {b, s, h},
          {b, s, h}, {b, s, f},     {b, s, f},    {b, s, 2}, {b, s, 2}};
}
}  // namespace transformer_block

namespace lm_head {
enum Param : std::size_t { kGamma, kBeta, kWu };
// x, LN output, LN (mean, rstd), softmax probabilities, targets.
enum Kept : std::size_t { kX, kNormed, kStats, kProbs, kTargets, kKeptCount };
}  // namespace lm_head

}  // namespace gpipe::exec::layout
