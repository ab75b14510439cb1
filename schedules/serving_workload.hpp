// An inference workload (docs/design.md, "Inference"), which the simulator
// predicts (sim/inference/) and the executor runs (exec/inference/): R items, each one
// micro-batch of b samples, served in order through the pipeline's stages,
// forward only, with at most B in flight.
//   - Closed loop (no arrival process): items 0..B-1 are admitted at time 0,
//     item r+B when item r leaves the last stage. It is also LLM decoding with
//     B sequences in flight, each token waiting for its predecessor.
//   - Open loop: item r arrives at r*T (--arrival-interval-us), or at the
//     times of a seeded Poisson process (--arrival-rate), and is admitted once
//     it has arrived and fewer than B are in flight. Its latency includes the
//     wait.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace gpipe::schedules {

struct Workload {
  int requests = 0;   // R
  int in_flight = 1;  // B
  // At most one of the two; neither is the closed loop.
  std::optional<double> arrival_interval_us;   // T
  std::optional<double> arrival_rate_per_s;    // Poisson, items per second
  std::uint64_t seed = 1;                      // of the Poisson arrivals

  [[nodiscard]] bool closed_loop() const { return !arrival_interval_us && !arrival_rate_per_s; }
};

// The most items a stream may have: enough for any percentile, and a
// replay of them on K stages holds about 100 K bytes per item.
inline constexpr int kMaxRequests = 1'000'000;
// The most item-stage forwards one replay holds (R x K).
inline constexpr std::int64_t kMaxForwards = std::int64_t{1} << 24;

// validate_workload throws InputError naming the flag: --requests < 1 or > kMaxRequests, --in-flight < 1, an
// interval that is negative or not finite, a rate that is not a finite
// positive number, both an interval and a rate.
void validate_workload(const Workload& workload);

// When each item arrives, in integer ns from the run's start: all 0 in the
// closed loop; llround(r * T * 1000) for an interval; for a rate, the partial
// sums of exponential gaps of mean 1/rate drawn from std::mt19937_64(seed)
// (each rounded to the ns, so the times are non-decreasing and reproducible
// from the seed with one standard library).
[[nodiscard]] std::vector<std::int64_t> arrival_times_ns(const Workload& workload);

}  // namespace gpipe::schedules
