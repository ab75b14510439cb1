// Parameter initialisation for the CPU layers, GPT-2 style: normal(0, 0.02)
// weights, zero biases, LayerNorm gamma 1 and beta 0. The normal draws come
// from std::mt19937_64 (whose output the standard fixes) through our own
// Box-Muller transform, not std::normal_distribution (whose algorithm is the
// library's choice), so that the same (seed, layer index) gives the same
// weights with any standard library, whatever stage the layer lands on.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

inline constexpr float kInitStddev = 0.02F;

class NormalInit {
 public:
  NormalInit(std::uint64_t seed, int layer_index);
  // A standard normal draw.
  [[nodiscard]] float next();
  // The layer's own key, from (seed, layer index) alone: what its dropout
  // masks are hashed from (exec/cpu/ops/dropout.hpp).
  [[nodiscard]] std::uint64_t key() const { return key_; }

 private:
  std::uint64_t key_;
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// A parameter (and its zero gradient) of `shape`, drawn from normal(0, stddev).
[[nodiscard]] Parameter normal_parameter(std::string name, std::vector<std::int64_t> shape,
                                         NormalInit& init, float stddev = kInitStddev);
// A parameter (and its zero gradient) of `shape`, every value `value`.
[[nodiscard]] Parameter constant_parameter(std::string name, std::vector<std::int64_t> shape,
                                           float value);

// Every parameter of `layout` in its order, each made as its Init says
// (normal weights drawn from `init` in that order).
[[nodiscard]] std::vector<Parameter> parameters_of(const models::LayerLayout& layout,
                                                   NormalInit& init);

}  // namespace gpipe::exec::cpu
