// Seeded jitter on top of any cost model (a decorator): each compute action's
// duration is the base duration times X, X lognormal with mean 1 and a given
// coefficient of variation, so durations stay positive and their mean is the
// base. Bytes pass through unchanged. The draw for an action depends only on
// (seed, action), never on the order the engine asks in, so a run is
// reproducible from its seed alone.
#pragma once

#include <cstdint>
#include <optional>

#include "schedules/action.hpp"
#include "sim/cost_model.hpp"

namespace gpipe::sim {

// splitmix64's finaliser: a bijective 64-bit mix, so nearby keys (seed, seed+1,
// action 0F0 vs 0F1) give unrelated generator seeds.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The seed of run `run` of a stochastic mode given --seed `seed`: mixed, so
// that --seed 1 and --seed 2 draw unrelated runs (seed + run would share all
// runs but one between them).
[[nodiscard]] constexpr std::uint64_t run_seed(std::uint64_t seed, int run) {
  return splitmix64(splitmix64(seed) + static_cast<std::uint64_t>(run));
}

// The factor X for one action: lognormal, mean 1, coefficient of variation cv
// (sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2), drawn from a std::mt19937_64
// seeded with splitmix64 of (seed, action). Exactly 1 when cv is 0. The normal
// draw is the standard library's, so values are reproducible for one library
// (libstdc++), not across libraries. Throws InputError naming --jitter for a
// negative or non-finite cv.
[[nodiscard]] double jitter_factor(const schedules::Action& action, double cv, std::uint64_t seed);

class JitteredCosts final : public RepricedCosts {
 public:
  // Keeps a reference to base, which must outlive this object (a temporary
  // base is refused). Throws InputError naming --jitter for a negative or
  // non-finite cv.
  JitteredCosts(const CostModel& base, double cv, std::uint64_t seed);
  JitteredCosts(const CostModel&& base, double cv, std::uint64_t seed) = delete;

  // Compute actions (F, B, I, W, R, STEP): llround(base * X); comm actions as the base.
  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override;
  // None: each action draws its own factor, so two micro-batches of one
  // size at one stage and kind take different times.
  [[nodiscard]] std::optional<StagePrices> stage_prices() const override { return std::nullopt; }

 private:
  double cv_;
  std::uint64_t seed_;
};

// The widest jitter accepted: a coefficient of variation of 10 (sigma 2.15).
inline constexpr double kMaxJitterCv = 10.0;
// Throws InputError naming --jitter unless cv is from 0 to kMaxJitterCv.
void validate_jitter_cv(double cv);

}  // namespace gpipe::sim
