#include "tools/gpipe-run/run_flags.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tools/common/shared_flags.hpp"
#include "models/optimizer.hpp"

namespace gpipe::tools {

void add_backend_flag(CLI::App& cmd, std::string& backend) {
  cmd.add_option("--backend", backend, "Where to run: cpu (a thread per rank, with --threads-per-rank helpers) or cuda (one GPU, a rank per SM partition; one GPU per process under torchrun, mpirun or srun)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void RunFlags::add_to(CLI::App& cmd, const std::string& profile_help) {
  add_backend_flag(cmd, backend);
  add_model_flag(cmd, model);
  add_backward_order_flag(cmd, backward_order);
  add_partition_flag(cmd, partition);
  add_profile_flag(cmd, profile, profile_help);
  add_seed_flag(cmd, seed, "Seed of the weights and the synthetic data");
  add_optimizer_flag(cmd, optimizer, "Optimizer applied at each stage's STEP");
  cmd.add_option("--lr", learning_rate, "Learning rate")->capture_default_str();
  cmd.add_option("--watchdog-seconds", watchdog_seconds,
                 "Stop a run in which no action finishes for this long (a stall)")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str();
}

std::vector<std::string> RunFlags::args(bool with_backward_order) const {
  std::vector<std::string> out{"--backend", backend, "--model", model};
  if (with_backward_order) out.insert(out.end(), {"--backward-order", backward_order});
  out.insert(out.end(), {"--partition", partition});
  if (!profile.empty()) out.insert(out.end(), {"--profile", profile});
  out.insert(out.end(), {"--seed", std::to_string(seed), "--optimizer", optimizer, "--lr",
                         fmt::format("{}", learning_rate), "--watchdog-seconds", fmt::format("{}", watchdog_seconds)});
  return out;
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
