// gpipe-run validate: the simulator against real runs over a grid. Profile the
// model on this CPU at every micro-batch size the grid needs (or read
// --profile), then run the grid --rounds times, interleaved, predicting,
// training and diffing each configuration (calibration/calibration.hpp);
// in the last round print a row of predicted vs measured step time (the
// median of every warm step), its noise band, bubble and peak activation as
// each finishes (validate_report.hpp); --out writes the CSV that
// plots/validation.py draws, --json prints every row with its full diff.
// Its flags are in validate_flags.hpp, what it launches as processes in
// validate_launch.hpp, and inference's grid in validate_inference.hpp.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "calibration/calibration.hpp"
#include "exec/dist/bootstrap.hpp"
#include "exec/runtime/run_settings.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "plan/microbatches.hpp"
#include "plan/model_profile.hpp"
#include "profiles/shipped.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/commands.hpp"
#include "tools/gpipe-run/launcher.hpp"
#include "tools/gpipe-run/rounds_progress.hpp"
#include "tools/gpipe-run/validate_flags.hpp"
#include "tools/gpipe-run/validate_launch.hpp"
#include "tools/gpipe-run/validate_report.hpp"

namespace gpipe::tools {
namespace {

// The profile to predict with: --profile, else one measured now at every
// micro-batch size the grid can use, as a rank of a `stages`-stage run
// computes (on the GPU: in its SM partition; on the CPU: with
// `threads_per_rank` threads).
profiles::Profile grid_profile(const ValidateFlags& f, const models::Model& model, const std::vector<int>& microbatches,
                               const exec::OptimizerConfig& optimizer, int threads_per_rank, int stages = 1) {
  if (!f.run.profile.empty()) {
    const auto path = profiles::resolve_profile(f.run.profile);
    profiles::Profile profile = profiles::load_profile(path);
    if (!f.json) {
      std::cout << fmt::format("profile     {} ({}, {}, {})\n", path.string(), profile.source, profile.device,
                               profile.dtype);
    }
    return profile;
  }
  std::vector<int> sizes = plan::microbatch_sizes_needed(f.grid.batch, microbatches);
  if (sizes.empty()) {
    // Every row would be skipped: say so before minutes of profiling.
    throw InputError(
        fmt::format("every M of --microbatches is larger than --batch {} (a micro-batch holds "
                    "at least one sample): nothing to validate",
                    f.grid.batch));
  }
  if (!f.launcher.empty()) return launched_profile(f, model, sizes, optimizer, threads_per_rank);
  exec::ProfilerOptions options = f.profiler_options(optimizer, threads_per_rank);
  options.on_layer = report_profiled_layer;
  profiles::Profile profile = measure_profile(f.run.backend, f.cuda, stages, model, sizes, options);
  if (!f.save_profile.empty()) profiles::write_profile(profile, f.save_profile);
  if (!f.json) {
    std::cout << fmt::format(
        "profile     measured now at micro-batch sizes {}{} ({}, {}; link {:.2f} us){}\n", fmt::join(sizes, ","),
        f.run.backend == "cuda" ? fmt::format(" for K={}", stages) : std::string(), profile.device, profile.dtype,
        profile.link.latency_us, f.save_profile.empty() ? "" : ", saved to " + f.save_profile);
  }
  return profile;
}

int run_validate_serving(const ValidateFlags& f) {
  if (f.run.backend != "cpu") throw InputError("--workload inference validates on the CPU so far");
  if (!f.run.profile.empty() && !f.save_profile.empty()) {
    throw InputError("--save-profile writes the profile measured when no --profile is given; drop one");
  }
  if (!f.out.empty()) check_writable(f.out, "--out");
  if (!f.save_profile.empty()) check_writable(f.save_profile, "--save-profile");
  InferenceValidation v;
  v.model = models::parse_model(f.run.model);
  v.stages = f.grid.stages;
  v.partition = f.run.partition;
  v.seed = f.run.seed;
  v.rounds = f.rounds;
  v.threads_per_rank = f.cpu.threads_for(std::ranges::max(parse_int_list(f.grid.stages, "--stages")));
  v.out = f.out;
  v.json = f.json;
  v.remeasure = f.run.profile.empty() && f.rounds > 1;
  if (!f.launcher.empty()) {
    (void)Launcher(f.launcher);  // its error before any measurement
    v.serve = [&f](const exec::inference::ServingRequest& rq) { return launched_serving(f, rq); };
  }
  v.profile = [&f, &v](const std::vector<int>& sizes, int round) {
    if (!f.run.profile.empty()) {
      profiles::Profile profile = profiles::load_profile(profiles::resolve_profile(f.run.profile));
      plan::check_profile_matches(v.model, profile);
      return profile;
    }
    // Under the launcher: the layers and the link between two processes.
    if (!f.launcher.empty()) {
      return launched_profile(f, v.model, sizes, f.run.optimizer_config(), v.threads_per_rank, round == 0);
    }
    if (!f.json) {
      std::cerr << (round == 0 ? fmt::format("validate: measuring the profile at micro-batch sizes {}\n",
                                             fmt::join(sizes, ","))
                               : fmt::format("validate: round {} of {}: the profile again\n", round, f.rounds));
    }
    exec::ProfilerOptions options = f.profiler_options(f.run.optimizer_config(), v.threads_per_rank);
    options.forward_only = true;  // as the stream runs them
    profiles::Profile profile = measure_profile("cpu", f.cuda, 1, v.model, sizes, options);
    if (round == 0 && !f.save_profile.empty()) profiles::write_profile(profile, f.save_profile);
    return profile;
  };
  return run_validate_inference(f.inference, v);
}

// InputError for the flags of a training grid that cannot go together.
void check_training_flags(const ValidateFlags& f, const CLI::App& cmd) {
  if (cmd.count("--microbatches") == 0) throw InputError("give --microbatches LIST");
  if (cmd.count("--batch") == 0) throw InputError("give --batch N");
  f.cuda.check_backend(f.run.backend);
  f.cpu.check_backend(f.run.backend);
  if (!f.launcher.empty()) {
    if (f.run.backend != "cpu") {
      throw InputError(
          "--launcher runs the cpu backend's ranks as processes; on a GPU, validate runs one "
          "process with a rank per SM partition");
    }
    (void)Launcher(f.launcher);  // its error before any measurement
  }
  if (f.data_parallel > 1 && f.launcher.empty()) {
    throw InputError(
        fmt::format("--data-parallel {} runs each configuration's replicas as processes: give "
                    "--launcher mpirun (or a prefix with {{K}}, which becomes K x T x D)",
                    f.data_parallel));
  }
  if (f.zero > 0 && f.data_parallel < 2) {
    throw InputError(
        fmt::format("--zero {} shards over the data-parallel group: give --data-parallel 2 or more", f.zero));
  }
  if (f.tensor_parallel > 1 && f.launcher.empty()) {
    throw InputError(
        fmt::format("--tensor-parallel {} runs each rank's parts as processes: give --launcher mpirun "
                    "(or a prefix with {{K}}, which becomes K x T x D)",
                    f.tensor_parallel));
  }
  if (f.tensor_parallel > 1 && !f.run.profile.empty()) {
    throw InputError("--tensor-parallel measures one rank's parts' profile under the launcher; drop --profile");
  }
  if (f.context_parallel > 1 && f.launcher.empty()) {
    throw InputError(
        fmt::format("--context-parallel {} runs each rank's share of a sequence as a process: give --launcher mpirun "
                    "(or a prefix with {{K}}, which becomes K x C x D)",
                    f.context_parallel));
  }
  if (f.context_parallel > 1 && !f.run.profile.empty()) {
    throw InputError("--context-parallel measures one rank's members' profile under the launcher; drop --profile");
  }
}

// The grid and how each configuration trains: in this process on the CPU's
// threads, on the GPU, or as processes under the launcher.
calibration::CalibrationOptions calibration_options(const ValidateFlags& f) {
  calibration::CalibrationOptions options;
  if (!f.launcher.empty()) {
    options.train = [&f](const exec::TrainOptions& t) { return launched_training(f, t); };
  }
  if (f.run.backend == "cuda") {
    if (exec::parse_launch_environment(exec::current_environment()).world_size > 1) {
      throw InputError(
          "validate runs every configuration in one process (one GPU, a rank per SM "
          "partition); start it without torchrun, mpirun or srun");
    }
    options.train = [&f](const exec::TrainOptions& t) { return run_training("cuda", f.cuda, t).result; };
  }
  // With context parallelism, the model as each process's layers compute it.
  options.model = models::split_context_parallel(models::parse_model(f.run.model), {.degree = f.context_parallel});
  if (f.context_parallel > 1) {
    exec::TrainOptions family;  // the executor's check of the layers it splits, before any measurement
    family.model = options.model;
    family.schedule.data_parallel = f.context_parallel * f.data_parallel;
    family.zero = f.zero;
    exec::check_context_parallel(family, f.run.backend);
  }
  plan::RequestGrid& grid = options.grid;
  f.grid.apply_to(grid);
  grid.base.partition = models::parse_partition_spec(f.run.partition);
  grid.base.backward_order = *schedules::parse_backward_order(f.run.backward_order);
  grid.base.data_parallel = f.data_parallel;
  grid.base.zero = f.zero;
  // The launcher's processes on this machine: every replica (and context
  // member) computes beside the others.
  options.replicas_sharing_machine = f.data_parallel * f.context_parallel;
  options.steps = f.steps;
  options.rounds = f.rounds;
  options.seed = f.run.seed;
  options.optimizer = f.run.optimizer_config();
  options.watchdog_seconds = f.run.watchdog_seconds;
  return options;
}

// The profile the rows predict from at first, and, on the GPU without
// --profile, one per K (`options.profile_for`); on the CPU without --profile
// and with several rounds, the profile measured again before each round and
// the rows predicted from the median (calibration/). On the GPU the
// partitions' profiles barely vary. Returns whether it is measured again.
profiles::Profile set_up_profiles(const ValidateFlags& f, calibration::CalibrationOptions& options, bool& remeasure) {
  // On the GPU a stage of a K-stage run has 1/K of the SMs: without --profile,
  // each K is predicted from a profile measured in its own partition.
  const bool per_stage_count = f.run.backend == "cuda" && f.run.profile.empty();
  if (per_stage_count && !f.save_profile.empty() && options.grid.stages.size() > 1) {
    throw InputError("--save-profile with --backend cuda measures one profile per K; give one --stages value");
  }
  auto measured = std::make_shared<std::map<int, profiles::Profile>>();
  if (per_stage_count) {
    options.profile_for = [&f, &options, measured](int k) -> const profiles::Profile& {
      auto it = measured->find(k);
      if (it == measured->end()) {
        it = measured->emplace(k, grid_profile(f, options.model, options.grid.microbatches, options.optimizer, 1, k))
                 .first;
      }
      return it->second;
    };
  }
  profiles::Profile profile = per_stage_count ? options.profile_for(options.grid.stages.front())
                                              : grid_profile(f, options.model, options.grid.microbatches,
                                                             options.optimizer, options.threads_per_rank);
  plan::check_profile_matches(options.model, profile);
  remeasure = f.run.backend == "cpu" && f.run.profile.empty() && f.rounds > 1;
  if (!remeasure) return profile;
  options.measure_profile = [&f, &options](int round) {
    if (!f.json) std::cerr << fmt::format("validate: round {} of {}: the profile again\n", round, f.rounds);
    const std::vector<int> sizes = plan::microbatch_sizes_needed(f.grid.batch, options.grid.microbatches);
    if (!f.launcher.empty()) {
      return launched_profile(f, options.model, sizes, options.optimizer, options.threads_per_rank,
                              /*announce=*/false);
    }
    return measure_profile(f.run.backend, f.cuda, 1, options.model, sizes,
                           f.profiler_options(options.optimizer, options.threads_per_rank));
  };
  if (!f.save_profile.empty()) {
    options.on_median_profile = [&f](const profiles::Profile& median) {
      profiles::write_profile(median, f.save_profile);
    };
  }
  return profile;
}

// The line before the table: the model, the batch, the replicas and parts,
// and how each row's step is measured.
void print_grid_header(const ValidateFlags& f, const calibration::CalibrationOptions& options, bool remeasure) {
  const std::string parts =
      f.tensor_parallel > 1 && f.context_parallel > 1
          ? fmt::format(", each sequence split over {} members and each member's blocks over {} processes",
                        f.context_parallel, f.tensor_parallel)
      : f.tensor_parallel > 1  ? fmt::format(", each rank's blocks split over {} processes", f.tensor_parallel)
      : f.context_parallel > 1 ? fmt::format(", each sequence split over {} processes", f.context_parallel)
                               : "";
  const std::string replicas = f.data_parallel > 1 ? fmt::format(" in each of {} replicas{}", f.data_parallel,
                                                                 f.zero > 0 ? fmt::format(", ZeRO {}", f.zero) : "")
                                                   : "";
  std::cout << fmt::format(
      "model       {}, batch {}{}{}; the grid runs {} times, interleaved, {} steps a run: each "
      "row's measured step is the median of its {} warm steps, its noise band their "
      "interquartile range{}\n\n",
      options.model.spec, f.grid.batch, parts, replicas, f.rounds, f.steps, f.rounds * (f.steps - 1),
      remeasure ? fmt::format("; the profile is measured before each round and every row "
                              "predicted from the median of the {}",
                              f.rounds)
                : std::string());
}

int run_validate(const ValidateFlags& f, const CLI::App& cmd) {
  f.inference.check_flags(cmd);
  if (cmd.count("--stages") == 0) throw InputError("give --stages LIST");
  if (f.inference.inference() && f.data_parallel > 1) {
    throw InputError(
        "--data-parallel replicates a training pipeline; an inference stream has no gradients to "
        "reduce (serve more streams instead)");
  }
  if (f.inference.inference() && (f.context_parallel > 1 || f.tensor_parallel > 1)) {
    throw InputError(fmt::format("{}: validate --workload inference serves each stage as one process; train "
                                 "and validate the split without --workload inference",
                                 f.context_parallel > 1 ? fmt::format("--context-parallel {}", f.context_parallel)
                                                        : fmt::format("--tensor-parallel {}", f.tensor_parallel)));
  }
  if (f.inference.inference()) return run_validate_serving(f);
  check_training_flags(f, cmd);
  require_backend(f.run.backend);
  calibration::CalibrationOptions options = calibration_options(f);
  if (!f.run.profile.empty() && !f.save_profile.empty()) {
    throw InputError("--save-profile writes the profile measured when no --profile is given; drop one");
  }
  if (!f.out.empty()) check_writable(f.out, "--out");
  if (!f.save_profile.empty()) check_writable(f.save_profile, "--save-profile");
  // On the CPU every row runs with the same threads per rank, so that one
  // profile, measured with them, serves the grid: --threads-per-rank, or the
  // cores shared by the largest K's ranks (of every replica).
  if (f.run.backend == "cpu") {
    options.threads_per_rank =
        f.cpu.threads_for(std::ranges::max(options.grid.stages) * f.data_parallel * f.tensor_parallel *
                          f.context_parallel);
  }
  bool remeasure = false;
  const profiles::Profile profile = set_up_profiles(f, options, remeasure);
  if (!f.json) {
    print_grid_header(f, options, remeasure);
    options.on_row = [first = true](const calibration::CalibrationRow& row) mutable {
      RoundsProgress::clear_bar();
      if (first) {
        print_table_header();
        first = false;
      }
      print_row(row);
    };
  }
  auto progress = std::make_shared<RoundsProgress>(f.rounds);
  options.on_run = [progress](int round, int index, int count) { progress->before_run(round, index, count); };
  const auto rows = calibration::run_calibration(profile, options);
  RoundsProgress::clear_bar();
  if (!f.out.empty()) write_text_file(f.out, calibration::calibration_csv(rows));
  if (f.json) {
    std::cout << calibration::calibration_json(rows).dump(2) << "\n";
  } else {
    print_summary(rows, f.tensor_parallel, f.context_parallel);
    if (!f.out.empty()) std::cout << "every configuration: " << f.out << "\n";
  }
  // A grid of which nothing could run has validated nothing: not a success.
  if (std::none_of(rows.begin(), rows.end(), [](const calibration::CalibrationRow& r) { return r.ok(); })) {
    throw InputError(
        fmt::format("none of the {} configurations of the grid can exist (each row says why): "
                    "nothing was validated",
                    rows.size()));
  }
  return 0;
}

}  // namespace

Subcommand add_validate_command(CLI::App& app) {
  auto f = std::make_shared<ValidateFlags>();
  CLI::App* cmd = app.add_subcommand("validate",
                                     "Check the simulator against real runs: for each configuration of a grid, "
                                     "predict, train, and compare step time, bubble and peak activation");
  f->add_to(*cmd);
  return {cmd, [f, cmd] { return run_validate(*f, *cmd); }};
}

}  // namespace gpipe::tools
