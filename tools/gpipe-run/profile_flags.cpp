#include "tools/gpipe-run/profile_flags.hpp"

#include "tools/common/path_flag.hpp"
#include "tools/common/seed_flag.hpp"
#include "tools/common/shared_flags.hpp"
#include "tools/gpipe-run/run_flags.hpp"

namespace gpipe::tools {

void ProfileFlags::add_to(CLI::App& cmd) {
  add_backend_flag(cmd, backend);
  add_model_flag(cmd, model);
  cmd.add_option("--micro-batch-sizes", micro_batch_sizes, "Micro-batch sizes to measure: 1,2,4,8 or 1..8")->required();
  cmd.add_option("--out", out, "Profile file to write (JSON)")->required()->check(nonempty_path());
  cmd.add_option("--warmup", warmup, "Untimed runs of each layer and size before timing")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd.add_option("--repeats", repeats, "Timed runs of each layer and size; the median is kept")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  add_seed_flag(cmd, seed, "Seed of the weights and the random inputs");
  add_optimizer_flag(cmd, optimizer, "Optimizer whose step optimizer_us times");
  cmd.add_option("--tensor-parallel", tensor_parallel,
                 "cpu under mpirun -np T: measure one rank's transformer or llama blocks split over T processes "
                 "(each process its part, the parts summing over MPI as gpipe-run train --tensor-parallel does); "
                 "the profile is part 0's, its tensor_parallel T")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--context-parallel", context_parallel,
                 "cpu under mpirun -np C: measure one rank's llama layers on its share of each sequence, its blocks "
                 "gathering the C processes' keys and values as gpipe-run train --context-parallel does; the "
                 "profile is member 0's, its context_parallel C; with --tensor-parallel T too, under mpirun "
                 "-np T x C, part 0 of member 0's")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--stages", stages,
                 "Measure as each rank of a K-stage run computes: cpu, with its threads (cores / K unless "
                 "--threads-per-rank); cuda, in its SM partition")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd.add_option("--workload", workload,
                 "training (each pass: every forward, every backward, the optimizer's steps) or inference (passes "
                 "of the forwards alone, as a stream runs them; the profile prices no backward)")
      ->check(CLI::IsMember({"training", "inference"}))
      ->capture_default_str();
  cmd.add_option("--link-fit", link_fit,
                 "cpu under mpirun -np 2: fit the link's bandwidth to the messages of a K=2 pipeline of the model "
                 "(pipeline: the receiver copies data just written while its peer computes), or to the idle "
                 "ping-pong alone (ping-pong); the latency is the ping-pong's either way")
      ->check(CLI::IsMember({"pipeline", "ping-pong"}))
      ->capture_default_str();
  cpu.add_to(cmd);
  cuda.add_to(cmd, /*with_timing=*/false);
}

std::vector<std::string> ProfileFlags::args() const {
  std::vector<std::string> out_args{"profile",
                                    "--backend",
                                    backend,
                                    "--model",
                                    model,
                                    "--micro-batch-sizes",
                                    micro_batch_sizes,
                                    "--out",
                                    out,
                                    "--warmup",
                                    std::to_string(warmup),
                                    "--repeats",
                                    std::to_string(repeats),
                                    "--seed",
                                    std::to_string(seed),
                                    "--optimizer",
                                    optimizer,
                                    "--tensor-parallel",
                                    std::to_string(tensor_parallel),
                                    "--context-parallel",
                                    std::to_string(context_parallel),
                                    "--stages",
                                    std::to_string(stages),
                                    "--workload",
                                    workload,
                                    "--link-fit",
                                    link_fit};
  for (const auto& more : {cpu.args(), cuda.args()}) out_args.insert(out_args.end(), more.begin(), more.end());
  return out_args;
}

}  // namespace gpipe::tools
