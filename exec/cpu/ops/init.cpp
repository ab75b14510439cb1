#include "exec/cpu/ops/init.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gpipe::exec::cpu {

namespace {

// splitmix64's finaliser: spreads nearby (seed, index) pairs over unrelated states.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A uniform draw in [0, 1) from the top 53 bits.
double uniform(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }

}  // namespace

NormalInit::NormalInit(std::uint64_t seed, int layer_index)
    : key_(mix(mix(seed) ^ static_cast<std::uint64_t>(layer_index))), engine_(key_) {}

float NormalInit::next() {
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<float>(spare_);
  }
  const double u1 = 1.0 - uniform(engine_);  // (0, 1]: log(u1) is finite
  const double u2 = uniform(engine_);
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return static_cast<float>(radius * std::cos(angle));
}

Parameter normal_parameter(std::string name, std::vector<std::int64_t> shape, NormalInit& init,
                           float stddev) {
  Parameter p{std::move(name), Tensor(shape), Tensor(shape)};
  for (float& v : p.value.f32()) v = stddev * init.next();
  return p;
}

Parameter constant_parameter(std::string name, std::vector<std::int64_t> shape, float value) {
  Parameter p{std::move(name), Tensor(shape), Tensor(shape)};
  std::ranges::fill(p.value.f32(), value);
  return p;
}

std::vector<Parameter> parameters_of(const models::LayerLayout& layout, NormalInit& init) {
  std::vector<Parameter> parameters;
  for (const models::ParameterLayout& p : layout.parameters) {
    switch (p.init) {
      case models::Init::normal:
        parameters.push_back(normal_parameter(p.name, p.shape, init));
        break;
      case models::Init::zeros:
        parameters.push_back(constant_parameter(p.name, p.shape, 0.0F));
        break;
      case models::Init::ones:
        parameters.push_back(constant_parameter(p.name, p.shape, 1.0F));
        break;
    }
  }
  return parameters;
}

}  // namespace gpipe::exec::cpu
