#include "tools/common/pipeline_flags.hpp"

#include <utility>

#include "base/error.hpp"
#include "models/checkpointing.hpp"
#include "tools/common/shared_flags.hpp"
#include "tools/common/schedule_file.hpp"

namespace gpipe::tools {

void PipelineFlags::add_shape(CLI::App& cmd, int max_stages, bool required) {
  cmd.add_option("--stages,-K", stages, "Number of pipeline ranks K (each holds V stages)")
      ->required(required)
      ->check(CLI::Range(1, max_stages));
  cmd.add_option("--stages-per-rank,-V", stages_per_rank,
                 "Stages per rank V of the interleaved and V-shaped schedules: interleaved-1f1b, looped-bfs and "
                 "interleaved-zb take V >= 2 (default 2), zbv and dualpipev V = 2, the others 1 (the model is cut "
                 "into K x V stages; default: the schedule's own; zb-auto: search only layouts of this V)")
      ->check(CLI::Range(1, 64));
  cmd.add_option("--microbatches,-M", microbatches, "Micro-batches per mini-batch M")
      ->required(required)
      ->check(CLI::Range(1, 1000000));
}

void PipelineFlags::add_schedule(CLI::App& cmd, const std::vector<std::string>& names, const std::string& help) {
  cmd.add_option("--schedule", schedule, help)->check(CLI::IsMember(names))->capture_default_str();
}

void PipelineFlags::add_recompute(CLI::App& cmd) {
  add_recompute_flag(cmd, recompute);
  cmd.add_option("--recompute-method", recompute_method,
                 "With --recompute full, Megatron's: uniform (every chunk of --recompute-num-layers blocks "
                 "checkpointed) or block (the first --recompute-num-layers blocks of each stage, one by one)")
      ->check(CLI::IsMember(models::checkpoint_method_names()))
      ->capture_default_str();
  cmd.add_option("--recompute-num-layers", recompute_num_layers,
                 "With --recompute full: blocks a checkpoint (uniform) or blocks checkpointed a stage (block)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

void PipelineFlags::add_batch(CLI::App& cmd, std::int64_t max_batch, bool with_micro_batch_size) {
  auto* n = cmd.add_option("--batch,-N", batch, "Samples per mini-batch N, split over the M micro-batches")
                ->check(CLI::Range(std::int64_t{1}, max_batch));
  if (!with_micro_batch_size) {
    n->required();
    return;
  }
  auto* b = cmd.add_option("--micro-batch-size,-b", micro_batch_size, "Samples per micro-batch b (instead of --batch)")
                ->check(CLI::Range(1, 1 << 24));
  n->excludes(b);
}

void PipelineFlags::check(const CLI::App& cmd) const {
  refuse_beside_schedule_file(cmd, schedule_file);
  if (schedule_file.empty() && (cmd.count("--stages") == 0 || cmd.count("--microbatches") == 0)) {
    throw InputError("give --stages K and --microbatches M, or --schedule-file FILE");
  }
}

plan::PlanRequest PipelineFlags::request(const CLI::App& cmd,
                                         const std::function<schedules::Schedule(schedules::Schedule)>& as_run) const {
  check(cmd);
  plan::PlanRequest r;
  r.schedule = schedule;
  r.stages = stages;
  r.stages_per_rank = stages_per_rank;
  r.microbatches = microbatches;
  r.batch = batch;
  r.micro_batch_size = micro_batch_size;
  r.recompute = *schedules::parse_recompute_policy(recompute);
  // (A command may take --recompute alone: schedule_command.)
  const auto given = [&cmd](const char* name) {
    const CLI::Option* option = cmd.get_option_no_throw(name);
    return option != nullptr && option->count() > 0;
  };
  if (r.recompute != schedules::RecomputePolicy::full &&
      (given("--recompute-method") || given("--recompute-num-layers"))) {
    throw InputError("--recompute-method and --recompute-num-layers shape --recompute full's checkpoints: give "
                     "--recompute full with them");
  }
  r.checkpointing = {*models::parse_checkpoint_method(recompute_method), recompute_num_layers};
  if (!schedule_file.empty()) {
    schedules::Schedule given = read_checked_schedule(schedule_file);
    r = plan::for_schedule(std::move(r), as_run ? as_run(std::move(given)) : std::move(given));
  }
  return r;
}

std::vector<std::string> PipelineFlags::args() const {
  std::vector<std::string> out;
  if (schedule_file.empty()) {
    out.insert(out.end(), {"--schedule", schedule, "--stages", std::to_string(stages), "--microbatches",
                           std::to_string(microbatches)});
    if (stages_per_rank > 0) out.insert(out.end(), {"--stages-per-rank", std::to_string(stages_per_rank)});
  } else {
    out.insert(out.end(), {"--schedule-file", schedule_file});
  }
  if (batch > 0) out.insert(out.end(), {"--batch", std::to_string(batch)});
  if (micro_batch_size > 0) out.insert(out.end(), {"--micro-batch-size", std::to_string(micro_batch_size)});
  out.insert(out.end(), {"--recompute", recompute});
  if (recompute == "full") {
    out.insert(out.end(), {"--recompute-method", recompute_method, "--recompute-num-layers",
                           std::to_string(recompute_num_layers)});
  }
  return out;
}

}  // namespace gpipe::tools
