#include "tools/gpipe-run/validate_report.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "sim/diff.hpp"
#include "tools/common/units.hpp"

namespace gpipe::tools {
namespace {

constexpr const char* kRowFormat =
    "{:<6} {:<11} {:>3} {:>4} {:>4}  {:>10} {:>10} {:>6} {:>7} {:>7}  {:>7} {:>7}  {:>11} {:>11}  {}\n";

// Inside the noise band: "in"; else how far outside, in points of the median.
std::string band_cell(const calibration::CalibrationRow& r) {
  const double outside = r.outside_band_points();
  if (outside == 0) return "in";
  return fmt::format("{}{:.1f}", r.predicted_step_us() > r.noise.median_us ? "+" : "-", outside);
}

std::string percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

// Mean |step time error| over the rows run, and the row with the largest one.
struct ErrorSummary {
  int count = 0;
  double mean_abs_pct = 0;
  const calibration::CalibrationRow* worst = nullptr;
};

template <typename Keep>
ErrorSummary summarise(const std::vector<calibration::CalibrationRow>& rows, Keep keep) {
  ErrorSummary s;
  double sum = 0;
  for (const auto& r : rows) {
    if (!r.ok() || !keep(r)) continue;
    const double e = std::abs(r.step_error_pct());
    if (std::isnan(e)) continue;
    ++s.count;
    sum += e;
    if (s.worst == nullptr || e > std::abs(s.worst->step_error_pct())) s.worst = &r;
  }
  s.mean_abs_pct = s.count > 0 ? sum / s.count : 0.0;
  return s;
}

std::string name_of(const calibration::CalibrationRow& r) {
  return fmt::format("{} {} K={} M={}", r.request.schedule, schedules::to_string(r.request.recompute), r.request.stages,
                     r.request.microbatches);
}

std::string error_line(const ErrorSummary& s) {
  return fmt::format("mean |error| {:.1f} % over {}, largest {:+.1f} % ({})", s.mean_abs_pct, s.count,
                     s.worst->step_error_pct(), name_of(*s.worst));
}

// The evidence: over the rows `keep` takes, how many have a quiet noise band,
// the median |error| of those, and how far outside its band any prediction lies.
template <typename Keep>
void print_noise_summary(const std::vector<calibration::CalibrationRow>& rows, Keep keep, const std::string& which) {
  int run = 0, inside = 0;
  std::vector<double> quiet_errors;
  const calibration::CalibrationRow* farthest = nullptr;
  std::vector<double> bands;
  for (const auto& r : rows) {
    if (!r.ok() || !keep(r)) continue;
    ++run;
    bands.push_back(r.noise.band_pct());
    if (r.noise.band_pct() < calibration::kQuietBandPct && !std::isnan(r.step_error_pct())) {
      quiet_errors.push_back(std::abs(r.step_error_pct()));
    }
    if (r.outside_band_points() == 0) ++inside;
    if (farthest == nullptr || r.outside_band_points() > farthest->outside_band_points()) farthest = &r;
  }
  if (run == 0) return;
  std::ranges::sort(bands);
  std::cout << fmt::format(
      "noise{}: the band (interquartile range of the warm steps) is {:.1f} % at the median, "
      "{:.1f} % at the widest\n",
      which, calibration::quantile(bands, 0.5), bands.back());
  if (quiet_errors.empty()) {
    std::cout << fmt::format(
        "  no configuration has a band under {:.0f} %: this machine is too noisy for the "
        "step times to be evidence (longer steps, --rounds or --steps help)\n",
        calibration::kQuietBandPct);
  } else {
    std::ranges::sort(quiet_errors);
    std::cout << fmt::format(
        "  median |error| {:.1f} % over the {} of {} configurations whose band is under {:.0f} %\n",
        calibration::quantile(quiet_errors, 0.5), quiet_errors.size(), run, calibration::kQuietBandPct);
  }
  std::cout << fmt::format("  {} of {} predictions inside their band", inside, run);
  if (farthest->outside_band_points() > 0) {
    std::cout << fmt::format("; the farthest outside by {:.1f} points ({})", farthest->outside_band_points(),
                             name_of(*farthest));
  }
  std::cout << "\n";
}

// The link model alone (sim/diff.hpp TransferError), over every message of
// the configurations run: what the profile's link predicts against the time
// the bytes took, each message's error pooled over every row.
void print_link_summary(const std::vector<calibration::CalibrationRow>& rows) {
  int messages = 0;
  double predicted = 0, measured = 0;
  std::int64_t smallest = 0, largest = 0;
  std::vector<double> errors;
  for (const auto& r : rows) {
    const sim::TransferError& t = r.diff.transfers;
    if (!r.ok() || t.count == 0) continue;
    messages += t.count;
    predicted += t.predicted_mean_us * t.count;
    measured += t.measured_mean_us * t.count;
    errors.insert(errors.end(), t.abs_errors_pct.begin(), t.abs_errors_pct.end());
    smallest = smallest == 0 ? r.message_bytes_min : std::min(smallest, r.message_bytes_min);
    largest = std::max(largest, r.message_bytes_max);
  }
  if (messages == 0) return;
  std::cout << fmt::format("link model: {} transfers of {} to {}, mean {} predicted against {} measured ({:+.1f} %)",
                           messages, format_bytes(smallest), format_bytes(largest),
                           format_time_us(predicted / messages), format_time_us(measured / messages),
                           measured > 0 ? (predicted - measured) / measured * 100 : 0.0);
  if (!errors.empty()) {
    std::ranges::sort(errors);
    std::cout << fmt::format("; a message's |error|: median {:.1f} %, largest {:.1f} %",
                             calibration::quantile(errors, 0.5), errors.back());
  }
  std::cout << "\n";
}

// The collectives' model alone, pooled over every row: `what` of each row's
// diff (each data-parallel reduction of a stage, from its start to its end on
// the rank's reduce stream; or each action's tensor- or context-parallel
// collectives).
void print_collective_summary(const std::vector<calibration::CalibrationRow>& rows,
                              sim::TransferError sim::TimelineDiff::*what, std::string_view many,
                              std::string_view one) {
  int count = 0;
  double predicted = 0, measured = 0;
  std::vector<double> errors;
  for (const auto& r : rows) {
    const sim::TransferError& g = r.diff.*what;
    if (!r.ok() || g.count == 0) continue;
    count += g.count;
    predicted += g.predicted_mean_us * g.count;
    measured += g.measured_mean_us * g.count;
    errors.insert(errors.end(), g.abs_errors_pct.begin(), g.abs_errors_pct.end());
  }
  if (count == 0) return;
  std::cout << fmt::format("collectives: {} {}, mean {} predicted against {} measured ({:+.1f} %)", count, many,
                           format_time_us(predicted / count), format_time_us(measured / count),
                           measured > 0 ? (predicted - measured) / measured * 100 : 0.0);
  if (!errors.empty()) {
    std::ranges::sort(errors);
    std::cout << fmt::format("; {}'s |error|: median {:.1f} %, largest {:.1f} %", one,
                             calibration::quantile(errors, 0.5), errors.back());
  }
  std::cout << "\n";
}

}  // namespace

void print_table_header() {
  std::cout << fmt::format(fmt::runtime(kRowFormat), "sched", "recompute", "K", "M", "b", "step pred", "measured",
                           "noise", "error", "band", "bubble", "meas", "peak act", "measured", "equal");
}

void print_row(const calibration::CalibrationRow& r) {
  const plan::PlanRequest& req = r.request;
  const std::string recompute(schedules::to_string(req.recompute));
  if (!r.ok()) {
    std::cout << fmt::format("{:<6} {:<11} {:>3} {:>4}  skipped: {}\n", req.schedule, recompute, req.stages,
                             req.microbatches, r.skipped);
    return;
  }
  const double error = r.step_error_pct();
  std::cout << fmt::format(fmt::runtime(kRowFormat), req.schedule, recompute, req.stages, req.microbatches,
                           r.microbatch_sizes.front(), format_time_us(r.predicted_step_us()),
                           format_time_us(r.noise.median_us), fmt::format("{:.1f}%", r.noise.band_pct()),
                           std::isnan(error) ? std::string("n/a") : fmt::format("{:+.1f}%", error), band_cell(r),
                           percent(r.diff.predicted_bubble), percent(r.diff.measured_bubble),
                           format_bytes(r.predicted_peak_activation_bytes),
                           format_bytes(r.measured_peak_activation_bytes), r.peak_activation_equal() ? "yes" : "NO")
            << std::flush;
}

void print_summary(const std::vector<calibration::CalibrationRow>& rows, int tensor_parallel, int context_parallel) {
  const auto run =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.ok(); }));
  std::cout << fmt::format("\n{} configurations: {} run, {} skipped (cannot exist)\n", rows.size(), run,
                           rows.size() - run);
  if (run == 0) return;
  const ErrorSummary all = summarise(rows, [](const auto&) { return true; });
  if (all.worst != nullptr) std::cout << "step time error: " << error_line(all) << "\n";
  // Ranks are threads: with more of them than hardware threads they take
  // turns on the cores, which the simulator (one processor per rank) does not model.
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const auto fits_cores = [cores, parts = tensor_parallel * context_parallel](const auto& r) {
    return r.request.stages * r.request.data_parallel * parts <= cores;
  };
  const std::string processes = context_parallel > 1 ? "K x T x C x D" : "K x T x D";
  const ErrorSummary fits = summarise(rows, fits_cores);
  if (fits.count < all.count && fits.worst != nullptr) {
    std::cout << fmt::format("  with {} <= {} (this machine's hardware threads): {}\n", processes, cores,
                             error_line(fits));
    print_noise_summary(rows, fits_cores, fmt::format(" with {} <= {}", processes, cores));
  } else {
    print_noise_summary(rows, fits_cores, "");
  }
  double bubble = 0;
  int equal = 0;
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    bubble += std::abs(r.diff.bubble_error_points);
    equal += r.peak_activation_equal();
  }
  std::cout << fmt::format("bubble error: mean |error| {:.1f} points\n", bubble / static_cast<double>(run));
  std::cout << fmt::format("peak activation equal to the prediction in {} of {} configurations\n", equal, run);
  print_link_summary(rows);
  print_collective_summary(rows, &sim::TimelineDiff::reductions, "data-parallel reductions", "a reduction");
  print_collective_summary(rows, &sim::TimelineDiff::tensor_parallel, "actions' tensor-parallel all-reduces",
                           "an action");
  print_collective_summary(rows, &sim::TimelineDiff::context_parallel,
                           "actions' context-parallel all-gathers and reduce-scatters", "an action");
}

}  // namespace gpipe::tools
