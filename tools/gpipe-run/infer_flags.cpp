#include "tools/gpipe-run/infer_flags.hpp"

#include <fmt/format.h>

#include "tools/common/path_flag.hpp"
#include "tools/common/seed_flag.hpp"
#include "tools/common/shared_flags.hpp"

namespace gpipe::tools {

void InferFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--backend", backend,
                 "Where to run: cpu (a thread per rank; under mpirun or srun, a process per rank), or cuda (a rank "
                 "per SM partition of one GPU)")
      ->capture_default_str();
  add_model_flag(cmd, model);
  cmd.add_option("--stages,-K", stages, "Pipeline stages K, one rank each")->check(CLI::Range(1, 4096));
  cmd.add_option("--micro-batch-size,-b", micro_batch_size, "Samples per item b")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  // Ranges are checked by schedules::validate_workload, which names the flag.
  cmd.add_option("--requests,-R", requests, "Items served, in order")->capture_default_str();
  cmd.add_option("--in-flight,-B", in_flight,
                 "Most items in the pipeline at once (closed loop: item r+B enters when item r leaves); default: K");
  auto* interval =
      cmd.add_option("--arrival-interval-us", arrival_interval_us, "Open loop: item r arrives at r times this (us)");
  auto* rate = cmd.add_option("--arrival-rate", arrival_rate, "Open loop: Poisson arrivals, items per second");
  interval->excludes(rate);
  add_seed_flag(cmd, arrival_seed, "Seed of the Poisson arrivals", "--arrival-seed");
  add_partition_flag(cmd, partition);
  add_profile_flag(cmd, profile, "Profile of the model to balance on (default: its analytic costs)");
  add_seed_flag(cmd, seed, "Seed of the weights and the data");
  cmd.add_option("--warmup", warmup, "Forwards each rank runs alone before the stream starts, untimed")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cpu.add_to(cmd);
  cuda.add_to(cmd, /*with_timing=*/false);
  cmd.add_option("--trace", trace, "Write the measured stream as a Chrome trace (Perfetto)")->check(nonempty_path());
  cmd.add_flag("--json", json,
               "Print the configuration, the measured metrics and each item's outputs (its loss per sample) as JSON");
}

std::vector<std::string> InferFlags::args() const {
  std::vector<std::string> out{"infer",
                               "--backend",
                               backend,
                               "--model",
                               model,
                               "--micro-batch-size",
                               std::to_string(micro_batch_size),
                               "--requests",
                               std::to_string(requests),
                               "--arrival-seed",
                               std::to_string(arrival_seed),
                               "--partition",
                               partition,
                               "--seed",
                               std::to_string(seed),
                               "--warmup",
                               std::to_string(warmup)};
  const auto add = [&out](const std::vector<std::string>& more) { out.insert(out.end(), more.begin(), more.end()); };
  if (stages > 0) add({"--stages", std::to_string(stages)});
  if (in_flight) add({"--in-flight", std::to_string(*in_flight)});
  if (arrival_interval_us) add({"--arrival-interval-us", fmt::format("{}", *arrival_interval_us)});
  if (arrival_rate) add({"--arrival-rate", fmt::format("{}", *arrival_rate)});
  if (!profile.empty()) add({"--profile", profile});
  add(cpu.args());
  add(cuda.args());
  if (!trace.empty()) add({"--trace", trace});
  if (json) out.emplace_back("--json");
  return out;
}

}  // namespace gpipe::tools
