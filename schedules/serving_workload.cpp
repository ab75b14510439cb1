#include "schedules/serving_workload.hpp"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::schedules {

void validate_workload(const Workload& w) {
  if (w.requests < 1) throw InputError(fmt::format("--requests must be at least 1, got {}", w.requests));
  if (w.requests > kMaxRequests) {
    throw InputError(fmt::format("--requests {} is more than the {} items a stream may have", w.requests, kMaxRequests));
  }
  if (w.in_flight < 1) throw InputError(fmt::format("--in-flight must be at least 1, got {}", w.in_flight));
  if (w.arrival_interval_us && w.arrival_rate_per_s) {
    throw InputError("--arrival-interval-us and --arrival-rate exclude each other: give one arrival process");
  }
  if (w.arrival_interval_us && !(std::isfinite(*w.arrival_interval_us) && *w.arrival_interval_us >= 0)) {
    throw InputError(fmt::format("--arrival-interval-us must be a finite number of microseconds >= 0, got {}",
                                 *w.arrival_interval_us));
  }
  if (w.arrival_rate_per_s && !(std::isfinite(*w.arrival_rate_per_s) && *w.arrival_rate_per_s > 0)) {
    throw InputError(fmt::format("--arrival-rate must be a finite positive number of items per second, got {}",
                                 *w.arrival_rate_per_s));
  }
}

std::vector<std::int64_t> arrival_times_ns(const Workload& w) {
  validate_workload(w);
  std::vector<std::int64_t> times(static_cast<std::size_t>(w.requests), 0);
  if (w.arrival_interval_us) {
    for (std::size_t r = 0; r < times.size(); ++r) {
      times[r] = std::llround(static_cast<double>(r) * *w.arrival_interval_us * 1e3);
    }
  } else if (w.arrival_rate_per_s) {
    // The first item arrives at 0, as with an interval: the run starts with it.
    std::mt19937_64 rng(w.seed);
    std::exponential_distribution<double> gap_s(*w.arrival_rate_per_s);
    double t_ns = 0;
    for (std::size_t r = 1; r < times.size(); ++r) {
      t_ns += gap_s(rng) * 1e9;
      times[r] = std::llround(t_ns);
    }
  }
  return times;
}

}  // namespace gpipe::schedules
