#include "tools/gpipe-run/validate_flags.hpp"

#include "tools/common/path_flag.hpp"
#include "tools/gpipe-run/commands.hpp"

namespace gpipe::tools {

void ValidateFlags::add_to(CLI::App& cmd) {
  run.add_to(cmd,
             "Profile of the model to predict with and balance on (default: measure one "
             "now at the micro-batch sizes the grid needs)");
  // Training's lists and --batch, or inference's (run_validate checks which).
  grid.add_to(cmd, std::int64_t{1} << 30, /*lists_required=*/false, /*batch_required=*/false);
  inference.add_to(cmd);
  cpu.add_to(cmd);
  cuda.add_to(cmd);
  cmd.add_option("--steps", steps,
                 "Training steps per configuration and round; every one but the first (cold) is measured")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  cmd.add_option("--rounds", rounds,
                 "Runs of the whole grid, interleaved (A B C A B C), so that a slow minute of the machine "
                 "spreads over every configuration; each row compares the median of every warm step of every "
                 "round, and their interquartile range is its noise band; on the CPU the profile (under a "
                 "--launcher, its link too) is measured before each round too, and every row predicted from "
                 "their median")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd.add_option("--save-profile", save_profile,
                 "Write the profile measured for the grid (on the CPU with several --rounds: the median of the "
                 "rounds' profiles, which the rows predict from)")
      ->check(nonempty_path());
  cmd.add_option("--warmup", warmup, "Profiler: untimed runs per layer and size")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd.add_option("--repeats", repeats, "Profiler: timed runs per layer and size (median kept)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd.add_option("--out", out, "Write one CSV row per configuration (plots/validation.py)")->check(nonempty_path());
  cmd.add_flag("--json", json, "Print every row, with its full diff, as JSON");
  cmd.add_option("--data-parallel", data_parallel,
                 "Train every configuration as D replicas of its pipeline, each on its own --batch N samples, "
                 "their gradients summed over MPI (needs --launcher: K x D processes); predicted with the "
                 "profile's collective fit (gpipe-run profile under mpirun -np 2)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_option("--zero", zero,
                 "ZeRO's stage over the --data-parallel replicas: 0, or 1 (each replica updates the optimizer state of "
                 "its 1/D share, gradients reduce-scattered, weights all-gathered in STEP)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd.add_option("--tensor-parallel", tensor_parallel,
                 "Train every configuration with each rank's transformer or llama blocks split over T processes "
                 "(needs --launcher: K x T x D processes); the profile is measured as one rank's T parts, each "
                 "layer's time with its all-reduces")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_option("--context-parallel", context_parallel,
                 "Train every configuration with each sequence split over C processes (the llama family; needs "
                 "--launcher: K x C x D processes); the profile is measured as one rank's C members, each layer's "
                 "time with its gathers of keys and values; with --tensor-parallel T too, K x T x C x D processes")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_option("--launcher", launcher,
                 "Train (or, with --workload inference, serve) each configuration as K processes, one rank each, "
                 "over MPI: mpirun (as mpirun -np K, "
                 "adding --oversubscribe and --allow-run-as-root where needed), or a command prefix with {K}, "
                 "e.g. \"srun -n {K}\"; the profile (layers and the link between two processes) is measured "
                 "the same way unless --profile is given");
}

exec::ProfilerOptions ValidateFlags::profiler_options(const exec::OptimizerConfig& optimizer,
                                                      int threads_per_rank) const {
  exec::ProfilerOptions options;
  options.threads_per_rank = threads_per_rank;
  options.warmup = warmup;
  options.repeats = repeats;
  options.seed = run.seed;
  options.optimizer = optimizer;
  options.on_pass = report_profiler_pass;
  return options;
}

}  // namespace gpipe::tools
