#include "exec/cpu/collective_call_log.hpp"

#include <algorithm>

#include "profiles/link_fit.hpp"

namespace gpipe::exec::cpu {

void CollectiveCallLog::record(models::Collective collective, std::int64_t bytes, double us) {
  const std::lock_guard lock(mutex_);
  times_us_[{collective, bytes}].push_back(us);
}

std::optional<profiles::CollectiveLink> CollectiveCallLog::fit(models::Collective collective, int ranks) const {
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
  if (medians.empty() || ranks < 2) return std::nullopt;
  return profiles::collective_ring_fit(collective, ranks, std::move(medians));
}

}  // namespace gpipe::exec::cpu
