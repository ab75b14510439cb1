#include "tools/gpipe-run/run_flags.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/model_spec.hpp"
#include "models/optimizer.hpp"

namespace gpipe::tools {

void add_backend_flag(CLI::App& cmd, std::string& backend) {
  cmd.add_option("--backend", backend, "Where to run: cpu (a thread per rank, with --threads-per-rank helpers) or cuda (one GPU, a rank per SM partition; one GPU per process under torchrun, mpirun or srun)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void RunFlags::add_to(CLI::App& cmd, const std::string& profile_help) {
  add_backend_flag(cmd, backend);
  cmd.add_option("--model", model,
                 models::model_spec_help())
      ->required();
  cmd.add_option("--backward-order", backward_order, "GPipe backward order")
      ->check(CLI::IsMember({"reverse", "forward"}))
      ->capture_default_str();
  cmd.add_option("--partition", partition,
                 "Layers per stage: balanced (GPipe's partitioner on --profile's costs, or on the "
                 "model's analytic fp32 costs), uniform, or a list n1,n2,...")
      ->capture_default_str();
  cmd.add_option("--profile", profile, profile_help)->check(nonempty_path());
  add_seed_flag(cmd, seed, "Seed of the weights and the synthetic data");
  cmd.add_option("--optimizer", optimizer, "Optimizer applied at each stage's STEP")
      ->check(CLI::IsMember(models::optimizer_names()))
      ->capture_default_str();
  cmd.add_option("--lr", learning_rate, "Learning rate")->capture_default_str();
  cmd.add_option("--watchdog-seconds", watchdog_seconds,
                 "Stop a run in which no action finishes for this long (a stall)")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str();
}

exec::OptimizerConfig RunFlags::optimizer_config() const {
  if (!std::isfinite(learning_rate) || learning_rate <= 0) {
    throw InputError(fmt::format("--lr must be a positive number, got {}", learning_rate));
  }
  exec::OptimizerConfig config;
  config.kind = *models::parse_optimizer(optimizer);
  config.learning_rate = learning_rate;
  return config;
}

}  // namespace gpipe::tools
