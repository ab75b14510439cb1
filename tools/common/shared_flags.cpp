#include "tools/common/shared_flags.hpp"

#include "models/model_spec.hpp"
#include "models/optimizer.hpp"
#include "schedules/schedule.hpp"
#include "tools/common/path_flag.hpp"

namespace gpipe::tools {

CLI::Option* add_model_flag(CLI::App& cmd, std::string& spec, std::string_view also) {
  return cmd.add_option("--model", spec, models::model_spec_help() + std::string(also))->required();
}

CLI::Option* add_partition_flag(CLI::App& cmd, std::string& partition) {
  return cmd
      .add_option("--partition", partition,
                  "Layers per stage: balanced (GPipe's partitioner on the profile's costs, or on the model's "
                  "analytic fp32 costs where no --profile is given; an inference stream's on its forwards alone), "
                  "uniform, or a list n1,n2,...")
      ->capture_default_str();
}

CLI::Option* add_backward_order_flag(CLI::App& cmd, std::string& order) {
  return cmd
      .add_option("--backward-order", order,
                  "GPipe backward order: reverse (B of M-1 first, GPipe Fig. 2c) or forward (B0 first)")
      ->check(CLI::IsMember({"reverse", "forward"}))
      ->capture_default_str();
}

CLI::Option* add_recompute_flag(CLI::App& cmd, std::string& policy) {
  return cmd
      .add_option("--recompute", policy,
                  "What the forward keeps and the backward rebuilds: never; stage (GPipe's stage-wide "
                  "re-materialization: each stage keeps its input, and R rebuilds the stage before its backward; "
                  "always, its former name, still reads); stage_except_last (stage, but a micro-batch whose "
                  "backward follows its forward at once; formerly except_last); full "
                  "(Megatron's per-layer checkpoints: each backward rebuilds its stage's blocks a chunk at a time)")
      ->check(CLI::IsMember(schedules::accepted_recompute_policy_names()))
      ->capture_default_str();
}

CLI::Option* add_optimizer_flag(CLI::App& cmd, std::string& optimizer, std::string_view help) {
  return cmd.add_option("--optimizer", optimizer, std::string(help))
      ->check(CLI::IsMember(models::optimizer_names()))
      ->capture_default_str();
}

CLI::Option* add_profile_flag(CLI::App& cmd, std::string& profile, std::string_view help) {
  return cmd.add_option("--profile", profile, std::string(help))->check(nonempty_path());
}

CLI::Option* add_schedule_file_flag(CLI::App& cmd, std::string& path, std::string_view help) {
  return cmd.add_option("--schedule-file", path, std::string(help))->check(nonempty_path());
}

}  // namespace gpipe::tools
