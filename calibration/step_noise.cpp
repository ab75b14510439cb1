#include "calibration/step_noise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpipe::calibration {

double StepNoise::band_pct() const { return median_us > 0 ? (q3_us - q1_us) / median_us * 100 : 0.0; }

double StepNoise::outside_points(double predicted_us) const {
  if (!(median_us > 0)) return 0.0;
  const double below = q1_us - predicted_us;
  const double above = predicted_us - q3_us;
  return std::max({0.0, below, above}) / median_us * 100;
}

double StepNoise::error_pct(double predicted_us) const {
  return median_us > 0 ? (predicted_us - median_us) / median_us * 100 : std::numeric_limits<double>::quiet_NaN();
}

double quantile(const std::vector<double>& sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1) * p;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

StepNoise step_noise(std::vector<double> step_us) {
  StepNoise noise;
  if (step_us.empty()) return noise;
  std::ranges::sort(step_us);
  noise.samples = static_cast<int>(step_us.size());
  noise.median_us = quantile(step_us, 0.5);
  noise.q1_us = quantile(step_us, 0.25);
  noise.q3_us = quantile(step_us, 0.75);
  return noise;
}

}  // namespace gpipe::calibration
