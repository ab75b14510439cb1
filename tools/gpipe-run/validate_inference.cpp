#include "tools/gpipe-run/validate_inference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <memory>
#include <span>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/files.hpp"
#include "calibration/serving_calibration.hpp"
#include "models/partition.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/seed_flag.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-run/rounds_progress.hpp"

namespace gpipe::tools {
namespace {

constexpr const char* kServingRowFormat =
    "{:>3} {:>3} {:>3}  {:>10} {:>10} {:>6} {:>7}  {:>10} {:>10} {:>6} {:>7}  {:>10} {:>10}  {:>6}  {}\n";

void print_header() {
  std::cout << fmt::format(fmt::runtime(kServingRowFormat), "K", "B", "b", "items/s", "measured", "band", "error",
                           "p50 pred", "measured", "band", "error", "p99 pred", "measured", "items", "peaks equal");
}

void print_row(const calibration::ServingCalibrationRow& r) {
  if (!r.ok()) {
    std::cout << fmt::format("{:>3} {:>3} {:>3}  skipped: {}\n", r.stages, r.in_flight, r.micro_batch_size, r.skipped);
    return;
  }
  std::cout << fmt::format(fmt::runtime(kServingRowFormat), r.stages, r.in_flight, r.micro_batch_size,
                           fmt::format("{:.1f}", r.predicted.throughput_items_per_s),
                           fmt::format("{:.1f}", r.throughput.median_us), fmt::format("{:.1f}%", r.throughput.band_pct()),
                           fmt::format("{:+.1f}%", r.throughput_error_pct()), format_time_us(r.predicted.latency.p50_us),
                           format_time_us(r.latency_p50.median_us), fmt::format("{:.1f}%", r.latency_p50.band_pct()),
                           fmt::format("{:+.1f}%", r.latency_error_pct()), format_time_us(r.predicted.latency.p99_us),
                           format_time_us(r.measured.latency.p99_us),
                           fmt::format("{:.1f}%", r.item_latency_mean_abs_error_pct), r.peak_activation_equal() ? "yes" : "no");
}

// "median |error| X % over the N of M configurations whose band is under 2 %;
// ... the farthest outside by P points", for one quantity.
void print_quantity(std::string_view name, const std::vector<const calibration::ServingCalibrationRow*>& ok,
                    double (*error)(const calibration::ServingCalibrationRow&), const calibration::StepNoise& (*noise)(const calibration::ServingCalibrationRow&),
                    double (*predicted)(const calibration::ServingCalibrationRow&)) {
  std::vector<double> quiet;
  double farthest = 0;
  int inside = 0;
  for (const auto* r : ok) {
    if (noise(*r).band_pct() < calibration::kQuietBandPct) quiet.push_back(std::abs(error(*r)));
    const double outside = noise(*r).outside_points(predicted(*r));
    farthest = std::max(farthest, outside);
    inside += outside == 0 ? 1 : 0;
  }
  std::ranges::sort(quiet);
  const std::string median = quiet.empty() ? std::string("no configuration")
                                           : fmt::format("{:.1f} %", quiet[quiet.size() / 2]);
  std::cout << fmt::format("{}: median |error| {} over the {} of {} configurations whose band is under {:g} %; "
                           "{} inside their band, the farthest outside by {:.1f} points\n",
                           name, median, quiet.size(), ok.size(), calibration::kQuietBandPct, inside, farthest);
}

void print_summary(const std::vector<calibration::ServingCalibrationRow>& rows) {
  std::vector<const calibration::ServingCalibrationRow*> ok;
  for (const auto& r : rows) {
    if (r.ok()) ok.push_back(&r);
  }
  std::cout << fmt::format("\n{} configurations: {} run, {} skipped (cannot exist)\n", rows.size(), ok.size(),
                           rows.size() - ok.size());
  if (ok.empty()) return;
  print_quantity(
      "throughput", ok, [](const calibration::ServingCalibrationRow& r) { return r.throughput_error_pct(); },
      [](const calibration::ServingCalibrationRow& r) -> const calibration::StepNoise& { return r.throughput; },
      [](const calibration::ServingCalibrationRow& r) { return r.predicted.throughput_items_per_s; });
  print_quantity(
      "median latency", ok, [](const calibration::ServingCalibrationRow& r) { return r.latency_error_pct(); },
      [](const calibration::ServingCalibrationRow& r) -> const calibration::StepNoise& { return r.latency_p50; },
      [](const calibration::ServingCalibrationRow& r) { return r.predicted.latency.p50_us; });
  double items = 0;
  int equal = 0;
  for (const auto* r : ok) {
    items += r->item_latency_mean_abs_error_pct;
    equal += r->peak_activation_equal() ? 1 : 0;
  }
  std::cout << fmt::format("item by item: latency |error| {:.1f} % on average over the configurations\n",
                           items / static_cast<double>(ok.size()));
  std::cout << fmt::format("peak activation equal to the prediction on every rank in {} of {} configurations\n", equal,
                           ok.size());
}

}  // namespace

void InferenceValidateFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--workload", workload,
                 "training (the grid of schedules x recompute x K x M) or inference (K x --in-flight x "
                 "--micro-batch-sizes, streams of --requests items)")
      ->check(CLI::IsMember({"training", "inference"}))
      ->capture_default_str();
  cmd.add_option("--in-flight,-B", in_flight, "Inference: items in flight, 1,2 or a range 1..4 (default: each K)");
  cmd.add_option("--micro-batch-sizes", micro_batch_sizes, "Inference: samples per item, 1,2,4 or a range");
  // Ranges are checked by schedules::validate_workload, which names the flag.
  cmd.add_option("--requests,-R", requests, "Inference: items per stream")->capture_default_str();
  auto* interval = cmd.add_option("--arrival-interval-us", arrival_interval_us,
                                  "Inference, open loop: item r arrives at r times this (us)");
  auto* rate = cmd.add_option("--arrival-rate", arrival_rate, "Inference, open loop: Poisson arrivals per second");
  interval->excludes(rate);
  add_seed_flag(cmd, arrival_seed, "Inference: seed of the Poisson arrivals", "--arrival-seed");
}

void InferenceValidateFlags::check_flags(const CLI::App& cmd) const {
  static constexpr std::array<std::string_view, 6> inference_only{
      "--in-flight", "--micro-batch-sizes", "--requests", "--arrival-interval-us", "--arrival-rate", "--arrival-seed"};
  static constexpr std::array<std::string_view, 7> training_only{
      "--microbatches", "--batch", "--schedule", "--recompute", "--stages-per-rank", "--steps", "--backward-order"};
  const auto given = [&](std::string_view flag) {
    const CLI::Option* o = cmd.get_option_no_throw(std::string(flag));
    return o != nullptr && o->count() > 0;
  };
  const std::span<const std::string_view> refused = inference() ? std::span<const std::string_view>(training_only)
                                                                : std::span<const std::string_view>(inference_only);
  for (const std::string_view flag : refused) {
    if (!given(flag)) continue;
    throw InputError(inference()
                         ? fmt::format("{} is for training; --workload inference validates streams of items", flag)
                         : fmt::format("{} is for inference: add --workload inference", flag));
  }
  if (inference() && micro_batch_sizes.empty()) throw InputError("give --micro-batch-sizes LIST (samples per item)");
}

int run_validate_inference(const InferenceValidateFlags& f, const InferenceValidation& v) {
  calibration::ServingCalibrationOptions o;
  o.model = v.model;
  o.stages = parse_int_list(v.stages, "--stages");
  if (!f.in_flight.empty()) o.in_flight = parse_int_list(f.in_flight, "--in-flight");
  o.micro_batch_sizes = parse_int_list(f.micro_batch_sizes, "--micro-batch-sizes");
  o.workload = {.requests = f.requests,
                .in_flight = 1,
                .arrival_interval_us = f.arrival_interval_us,
                .arrival_rate_per_s = f.arrival_rate,
                .seed = f.arrival_seed};
  schedules::validate_workload(o.workload);
  o.partition = models::parse_partition_spec(v.partition);
  o.rounds = v.rounds;
  o.seed = v.seed;
  o.threads_per_rank = v.threads_per_rank;
  o.serve = v.serve;
  std::vector<int> sizes = o.micro_batch_sizes;
  std::ranges::sort(sizes);
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const profiles::Profile profile = v.profile(sizes, 0);
  if (v.remeasure) o.measure_profile = [&v, sizes](int round) { return v.profile(sizes, round); };
  if (!v.json) {
    std::cout << fmt::format(
        "model       {}; streams of {} items ({}); the grid runs {} times, interleaved: each row's throughput and "
        "median latency are the medians of its rounds, their interquartile ranges its noise bands{}\n\n",
        o.model.spec, f.requests, o.workload.closed_loop() ? "closed loop" : "open loop", v.rounds,
        v.remeasure ? fmt::format("; the profile is measured before each round and every row predicted from the "
                                  "median of the {}",
                                  v.rounds)
                    : std::string());
    o.on_row = [first = true](const calibration::ServingCalibrationRow& row) mutable {
      RoundsProgress::clear_bar();
      if (first) print_header();
      first = false;
      print_row(row);
    };
  }
  auto progress = std::make_shared<RoundsProgress>(v.rounds);
  o.on_run = [progress](int round, int index, int count) { progress->before_run(round, index, count); };
  const std::vector<calibration::ServingCalibrationRow> rows = calibration::run_serving_calibration(profile, o);
  RoundsProgress::clear_bar();
  if (!v.out.empty()) write_text_file(v.out, calibration::serving_calibration_csv(rows));
  if (v.json) {
    std::cout << calibration::serving_calibration_json(rows).dump(2) << "\n";
  } else {
    print_summary(rows);
    if (!v.out.empty()) std::cout << "every configuration: " << v.out << "\n";
  }
  if (std::ranges::none_of(rows, [](const auto& r) { return r.ok(); })) {
    throw InputError(fmt::format("none of the {} configurations of the grid can exist (each row says why): "
                                 "nothing was validated",
                                 rows.size()));
  }
  return 0;
}

}  // namespace gpipe::tools
