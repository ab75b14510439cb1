// gpipe-sim diff PREDICTED.json MEASURED.json: print how far the prediction is
// from the measurement (text report or --json). With --torch-traces R0.json,R1.json
// instead of MEASURED, the measurement is torch.distributed.pipelining's run,
// one PyTorch profiler trace per rank (interop/torch_pipeline_timeline.hpp);
// --torch-timeline OUT writes it as a gpipe trace. Exit 0 when |step time error|
// is within --tolerance (the project's goal, 2 %), 1 when it exceeds it (after
// the report, with one line on stderr), 2 for bad input.
#include "tools/gpipe-sim/commands.hpp"

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "interop/kineto_trace.hpp"
#include "interop/torch_pipeline_timeline.hpp"
#include "sim/diff.hpp"
#include "timelines/chrome_trace.hpp"
#include "tools/common/path_flag.hpp"

namespace gpipe::tools {
namespace {

struct DiffFlags {
  std::string predicted;
  std::string measured;
  std::vector<std::string> torch_traces;
  std::string torch_timeline;
  std::optional<int> torch_step;
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
  if (f.measured.empty() == f.torch_traces.empty()) {
    throw InputError("give MEASURED (a gpipe trace) or --torch-traces (one PyTorch profiler trace per rank), one of them");
  }
  timelines::Timeline predicted = timelines::read_chrome_trace(f.predicted);
  timelines::Timeline measured;
  std::string measured_name = f.measured;
  std::string torch_header;
  nlohmann::json torch_json;  // what the header says, for --json
  if (!f.torch_traces.empty()) {
    std::vector<interop::KinetoTrace> traces;
    for (const std::string& path : f.torch_traces) traces.push_back(interop::read_kineto_trace(path));
    interop::TorchPipelineRun run = interop::torch_pipeline_run(traces, {.step = f.torch_step});
    measured = std::move(run.timeline);
    measured_name = "--torch-traces";
    // torch names its schedule its own way: the shape decides whether it is the predicted one.
    const std::string torch_name = measured.info.schedule_name;
    if (!f.torch_timeline.empty()) timelines::write_chrome_trace(measured, f.torch_timeline);
    measured.info.schedule_name = predicted.info.schedule_name;
    // torch's optimizer runs outside its schedule: the step it measures has no STEP.
    const auto steps = std::erase_if(predicted.actions, [](const timelines::TimedAction& a) {
      return a.action.kind == schedules::ActionKind::STEP;
    });
    torch_json = {{"labels", torch_name == "gpipe" ? "ScheduleGPipe" : "schedule runtime"},
                  {"clock", run.clock.method},
                  {"clock_error_us", static_cast<double>(run.clock.error_ns) / 1e3},
                  {"barrier_exit_spread_us", static_cast<double>(run.clock.barrier_exit_spread_ns) / 1e3},
                  {"left_out", run.left_out},
                  {"predicted_steps_left_out", steps},
                  {"steps", run.steps},
                  {"step", run.step},
                  {"step_taken", run.chosen}};
    std::vector<double> spans_us;
    for (const std::int64_t ns : run.step_spans_ns) spans_us.push_back(static_cast<double>(ns) / 1e3);
    torch_json["step_spans_us"] = spans_us;
    std::string step_line;  // after the torch line, when the traces hold several steps
    if (run.steps > 1) {
      const auto [low, high] = std::ranges::minmax(run.step_spans_ns);
      step_line = fmt::format(
          "torch step  {} of {} ({}), {:.1f} us; the steps {:.1f} to {:.1f} us ({:.1f} % apart)\n", run.step,
          run.steps, run.chosen, static_cast<double>(run.step_spans_ns[static_cast<std::size_t>(run.step - 1)]) / 1e3,
          static_cast<double>(low) / 1e3, static_cast<double>(high) / 1e3,
          low > 0 ? 100.0 * static_cast<double>(high - low) / static_cast<double>(low) : 0.0);
    }
    torch_header = fmt::format("torch       {} ranks ({}), clock: {}, error at most {:.1f} us (barrier exits {:.1f} us apart){}{}\n",
                               measured.info.num_ranks,
                               torch_name == "gpipe" ? "ScheduleGPipe's labels" : "the schedule runtime's labels",
                               run.clock.method, static_cast<double>(run.clock.error_ns) / 1e3,
                               static_cast<double>(run.clock.barrier_exit_spread_ns) / 1e3,
                               run.left_out.empty() ? std::string()
                                                    : fmt::format("; left out: {}", fmt::join(run.left_out, ", ")),
                               steps == 0 ? std::string()
                                          : fmt::format("; the prediction's {} STEPs left out (torch's optimizer runs "
                                                        "outside its schedule)",
                                                        steps));
    torch_header += step_line;
  } else {
    measured = timelines::read_chrome_trace(f.measured);
  }
  sim::TimelineDiff diff;
  try {
    diff = sim::diff_timelines(predicted, measured, f.worst);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} vs {}: {}", f.predicted, measured_name, e.what()));
  }
  // NaN (a measured step time of 0) never counts as within tolerance.
  const bool within = std::abs(diff.step_time_error_pct) <= f.tolerance_pct;
  if (f.json) {
    nlohmann::json j = sim::to_json(diff);
    j["tolerance_pct"] = f.tolerance_pct;
    if (!torch_json.is_null()) j["torch"] = torch_json;
    j["within_tolerance"] = within;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << torch_header << sim::to_text(diff);
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
              "bubble, per-kind durations, start drift, peak memory, each rank's waits and what held it, worst actions; "
              "or against torch.distributed.pipelining's own run (--torch-traces)");
  cmd->add_option("PREDICTED", flags->predicted, "Chrome trace predicted by gpipe-sim run")
      ->required()
      ->check(nonempty_path());
  cmd->add_option("MEASURED", flags->measured, "Chrome trace measured by gpipe-run train (or give --torch-traces)")
      ->check(nonempty_path());
  cmd->add_option("--torch-traces", flags->torch_traces,
                  "Instead of MEASURED: torch.distributed.pipelining's run, one PyTorch profiler trace per rank "
                  "(r0.json,r1.json; docs/torch.md)")
      ->delimiter(',')
      ->check(nonempty_path());
  CLI::Option* torch = cmd->get_option("--torch-traces");
  cmd->add_option("--torch-timeline", flags->torch_timeline,
                  "With --torch-traces: write torch's run as a gpipe trace (Perfetto) to this file")
      ->check(nonempty_path())
      ->needs(torch);
  cmd->add_option("--torch-step", flags->torch_step,
                  "With --torch-traces of several steps: compare the N-th (1 = the first; split by ProfilerStep#N "
                  "spans, else by each recurrence of a rank's first pipeline label) instead of the median step")
      ->check(CLI::Range(1, 1000000))
      ->needs(torch);
  cmd->add_flag("--json", flags->json, "Print the comparison as JSON");
  cmd->add_option("--tolerance", flags->tolerance_pct,
                  "Largest |step time error| in percent that exits 0 (else exit 1)")
      ->capture_default_str();
  cmd->add_option("--worst", flags->worst, "How many actions with the largest duration error to list")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  return {cmd, [flags] { return run_diff(*flags); }};
}

}  // namespace gpipe::tools
