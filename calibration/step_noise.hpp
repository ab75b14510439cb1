// How much a configuration's measured step time moves from step to step and
// run to run, and whether a prediction can be told apart from that. A
// validation measures each configuration over several rounds of several
// steps; on a machine shared with other work the steps spread, and an error
// smaller than the spread is no evidence of a model error. The centre is the
// median (one slow step moves it little), the band the interquartile range.
#pragma once

#include <vector>

namespace gpipe::calibration {

// A configuration's error counts as evidence in a validation's summary only
// where its noise band is under this (percent of its median).
constexpr double kQuietBandPct = 2.0;

struct StepNoise {
  int samples = 0;
  double median_us = 0;
  double q1_us = 0;  // first quartile
  double q3_us = 0;  // third quartile

  // The band's width, (q3 - q1) / median, in percent.
  [[nodiscard]] double band_pct() const;
  // How far `predicted_us` lies outside [q1, q3], in percent of the median
  // ("points"); 0 inside the band.
  [[nodiscard]] double outside_points(double predicted_us) const;
  // (predicted - median) / median, in percent.
  [[nodiscard]] double error_pct(double predicted_us) const;
};

// Quantile p in [0, 1] of `sorted` (ascending, not empty), interpolated
// linearly between order statistics (Hyndman and Fan's type 7, numpy's default).
[[nodiscard]] double quantile(const std::vector<double>& sorted, double p);

// The median and quartiles of `step_us`; InputError-free: an empty list gives
// samples 0 and zeros.
[[nodiscard]] StepNoise step_noise(std::vector<double> step_us);

}  // namespace gpipe::calibration
