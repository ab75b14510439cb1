#include "exec/cpu/logged_context_parallel.hpp"

#include <algorithm>
#include <chrono>

#include "profiles/link_fit.hpp"

namespace gpipe::exec::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

void LoggedContextParallel::all_gather(std::span<const float> mine, std::span<float> all) {
  const auto start = Clock::now();
  group_.all_gather(mine, all);
  record(models::Collective::all_gather, static_cast<std::int64_t>(all.size_bytes()), us_since(start));
}

void LoggedContextParallel::reduce_scatter_sum(std::span<const float> all, std::span<float> mine) {
  const auto start = Clock::now();
  group_.reduce_scatter_sum(all, mine);
  record(models::Collective::reduce_scatter, static_cast<std::int64_t>(all.size_bytes()), us_since(start));
}

void LoggedContextParallel::record(models::Collective collective, std::int64_t bytes, double us) {
  const std::lock_guard lock(mutex_);
  times_us_[{collective, bytes}].push_back(us);
}

std::optional<profiles::CollectiveLink> LoggedContextParallel::fit(models::Collective collective) const {
  const std::lock_guard lock(mutex_);
  std::vector<profiles::LinkPoint> medians;
  for (const auto& [key, times] : times_us_) {
    if (key.first != collective) continue;
    std::vector<double> sorted = times;
    std::ranges::sort(sorted);
    // A call can finish within the clock's step: a median of 0 is no time to fit.
    const double median = std::max(sorted[sorted.size() / 2], 1e-3);
    medians.push_back({key.second, median});
  }
  if (medians.empty() || group_.size() < 2) return std::nullopt;
  return profiles::collective_ring_fit(collective, group_.size(), std::move(medians));
}

}  // namespace gpipe::exec::cpu
