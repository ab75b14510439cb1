#include "timelines/report_check.hpp"

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::timelines {
namespace {

// A fraction computed in floating point from integer ns may land a few ulps
// outside [0, 1]; anything further is a bug.
constexpr double kFractionSlack = 1e-12;

bool fraction_ok(double f) { return std::isfinite(f) && f >= -kFractionSlack && f <= 1.0 + kFractionSlack; }

std::string fraction_violation(std::string_view name, double f) {
  return fraction_ok(f) ? std::string() : fmt::format("{} {} is outside [0, 1]", name, f);
}

std::string nonnegative_violation(std::string_view name, double v) {
  return std::isfinite(v) && v >= 0.0 ? std::string() : fmt::format("{} {} is not a finite number >= 0", name, v);
}

std::string rank_violation(const RankMetrics& r, std::int64_t step_ns) {
  if (r.busy_ns < 0) return fmt::format("rank {} is busy {} ns, less than 0", r.rank, r.busy_ns);
  if (r.busy_ns > step_ns) {
    return fmt::format("rank {} is busy {} ns in a step of {} ns", r.rank, r.busy_ns, step_ns);
  }
  if (auto why = nonnegative_violation(fmt::format("rank {}'s busy time (us)", r.rank), r.busy_us); !why.empty()) {
    return why;
  }
  if (auto why = fraction_violation(fmt::format("rank {}'s utilisation", r.rank), r.utilization); !why.empty()) {
    return why;
  }
  if (r.peak_activation_bytes < 0) {
    return fmt::format("rank {}'s activation peak {} bytes is less than 0", r.rank, r.peak_activation_bytes);
  }
  if (r.static_bytes < 0) return fmt::format("rank {}'s static memory {} bytes is less than 0", r.rank, r.static_bytes);
  return {};
}

}  // namespace

std::string report_violation(const Metrics& m) {
  if (m.step_time_ns < 0) return fmt::format("the step time {} ns is less than 0", m.step_time_ns);
  for (const auto& why : {nonnegative_violation("the step time (us)", m.step_time_us),
                          fraction_violation("the bubble fraction", m.bubble_fraction),
                          m.bubble_fraction_analytic
                              ? fraction_violation("the closed-form bubble fraction", *m.bubble_fraction_analytic)
                              : std::string(),
                          nonnegative_violation("the bubble over ideal", m.bubble_time_over_ideal),
                          m.bubble_time_over_ideal_analytic
                              ? nonnegative_violation("the closed-form bubble over ideal",
                                                      *m.bubble_time_over_ideal_analytic)
                              : std::string(),
                          nonnegative_violation("the throughput (samples/s)", m.throughput_samples_per_s)}) {
    if (!why.empty()) return why;
  }
  for (const auto& r : m.ranks) {
    if (auto why = rank_violation(r, m.step_time_ns); !why.empty()) return why;
  }
  return {};
}

void check_report(const Metrics& metrics, std::string_view what) {
  if (const std::string why = report_violation(metrics); !why.empty()) {
    throw InternalError(fmt::format("report check failed for {}: {}", what, why));
  }
}

}  // namespace gpipe::timelines
