// gpipe-sim diff PREDICTED.json MEASURED.json: print how far the prediction is
// from the measurement (text report or --json). Exit 0 when |step time error|
// is within --tolerance (the project's goal, 2 %), 1 when it exceeds it (after
// the report, with one line on stderr), 2 for bad input.
#include "sim/tool/commands.hpp"

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/path_flag.hpp"
#include "schedules/chrome_trace.hpp"
#include "schedules/error.hpp"
#include "sim/diff.hpp"

namespace gpipe::cli {
namespace {

struct DiffFlags {
  std::string predicted;
  std::string measured;
  bool json = false;
  double tolerance_pct = 2.0;
  int worst = 10;
};

// "2.0", "0.25": one decimal at least, all the decimals the user gave.
std::string tolerance_text(double pct) {
  return std::round(pct * 10.0) == pct * 10.0 ? fmt::format("{:.1f}", pct) : fmt::format("{}", pct);
}

int run_diff(const DiffFlags& f) {
  if (!std::isfinite(f.tolerance_pct) || f.tolerance_pct < 0.0) {
    throw InputError(fmt::format("--tolerance must be a percentage of 0 or more, not {}",
                                 f.tolerance_pct));
  }
  const schedules::Timeline predicted = schedules::read_chrome_trace(f.predicted);
  const schedules::Timeline measured = schedules::read_chrome_trace(f.measured);
  sim::TimelineDiff diff;
  try {
    diff = sim::diff_timelines(predicted, measured, f.worst);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} vs {}: {}", f.predicted, f.measured, e.what()));
  }
  // NaN (a measured step time of 0) never counts as within tolerance.
  const bool within = std::abs(diff.step_time_error_pct) <= f.tolerance_pct;
  if (f.json) {
    nlohmann::json j = sim::to_json(diff);
    j["tolerance_pct"] = f.tolerance_pct;
    j["within_tolerance"] = within;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << sim::to_text(diff);
  }
  if (within) return 0;
  const std::string error = std::isnan(diff.step_time_error_pct)
                                ? std::string("n/a (the measured step time is 0)")
                                : fmt::format("{:+.2f} %", diff.step_time_error_pct);
  std::cerr << "gpipe-sim diff: step time error " << error << " exceeds --tolerance "
            << tolerance_text(f.tolerance_pct) << " %\n";
  return 1;
}

}  // namespace

Subcommand add_diff_command(CLI::App& app) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare a predicted trace with a measured one, action by action: step time, "
              "bubble, per-kind durations, start drift, peak memory, worst actions");
  cmd->add_option("PREDICTED", flags->predicted, "Chrome trace predicted by gpipe-sim run")
      ->required()
      ->check(nonempty_path());
  cmd->add_option("MEASURED", flags->measured, "Chrome trace measured by gpipe-run train")
      ->required()
      ->check(nonempty_path());
  cmd->add_flag("--json", flags->json, "Print the comparison as JSON");
  cmd->add_option("--tolerance", flags->tolerance_pct,
                  "Largest |step time error| in percent that exits 0 (else exit 1)")
      ->capture_default_str();
  cmd->add_option("--worst", flags->worst, "How many actions with the largest duration error to list")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  return {cmd, [flags] { return run_diff(*flags); }};
}

}  // namespace gpipe::cli
