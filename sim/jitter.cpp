#include "sim/jitter.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "base/error.hpp"
#include "profiles/limits.hpp"

namespace gpipe::sim {
void validate_jitter_cv(double cv) {
  if (!std::isfinite(cv) || cv < 0 || cv > kMaxJitterCv) {
    throw InputError(
        fmt::format("--jitter must be a coefficient of variation from 0 to {:g}, got {:g}", kMaxJitterCv, cv));
  }
}

double jitter_factor(const schedules::Action& action, double cv, std::uint64_t seed) {
  validate_jitter_cv(cv);
  if (cv == 0) return 1.0;
  const double sigma2 = std::log1p(cv * cv);
  std::mt19937_64 gen(splitmix64(splitmix64(seed) ^ action_key(action)));
  std::lognormal_distribution<double> x(-sigma2 / 2, std::sqrt(sigma2));
  return x(gen);
}

JitteredCosts::JitteredCosts(const CostModel& base, double cv, std::uint64_t seed)
    : RepricedCosts(base), cv_(cv), seed_(seed) {
  validate_jitter_cv(cv);
}

std::int64_t JitteredCosts::duration_ns(const schedules::Action& action) const {
  const std::int64_t base = this->base().duration_ns(action);
  if (cv_ == 0 || schedules::is_comm(action.kind)) return base;
  // A factor from the far tail of a wide lognormal, on a long action, can
  // leave what a step's integer ns add up: held at a tenth of that instead.
  const double jittered = static_cast<double>(base) * jitter_factor(action, cv_, seed_);
  return std::llround(std::min(jittered, profiles::kMaxStepNs / 10));
}

}  // namespace gpipe::sim
