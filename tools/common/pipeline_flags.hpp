// The flags that shape one pipeline, as gpipe-sim run predicts it and
// gpipe-run train runs it, and the plan request they make: --schedule or
// --schedule-file, K, V, M, the batch (N, or b per micro-batch) and
// recompute (the partition is the command's: shared_flags.hpp). Each command adds them in the order its help lists them
// and builds its request here, so that the two read the same flags the same
// way; args() writes them back as a command line (validate's children).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan/plan.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::tools {

struct PipelineFlags {
  std::string schedule = "gpipe";
  std::string schedule_file;  // an IR JSON or torch CSV; empty: generate
  int stages = 0;
  int stages_per_rank = 0;  // 0: the schedule's own
  int microbatches = 0;
  std::int64_t batch = 0;
  int micro_batch_size = 0;  // instead of the batch, where a command takes it
  std::string recompute = "never";
  // Megatron's full recompute's checkpoints (models/checkpointing.hpp).
  std::string recompute_method = "uniform";
  int recompute_num_layers = 1;

  // --stages,-K (at most `max_stages`), --stages-per-rank,-V and
  // --microbatches,-M; K and M `required`, or else required unless
  // --schedule-file gives them (check()).
  void add_shape(CLI::App& cmd, int max_stages, bool required = false);
  // --schedule, one of `names`, with `help`.
  void add_schedule(CLI::App& cmd, const std::vector<std::string>& names, const std::string& help);
  // --recompute, and --recompute-method and --recompute-num-layers for
  // --recompute full.
  void add_recompute(CLI::App& cmd);
  // --batch,-N up to `max_batch`: required, or else excluding
  // --micro-batch-size,-b (`with_micro_batch_size`; the caller checks that one is given).
  void add_batch(CLI::App& cmd, std::int64_t max_batch, bool with_micro_batch_size);

  // Throws InputError for a schedule file beside the flags it replaces, or
  // neither a file nor K and M (`cmd` says which were given).
  void check(const CLI::App& cmd) const;
  // check(), then the request: a generated schedule's, or the file's (through
  // `as_run`, what the command runs of it; identity when empty). InputError
  // for a value that is not one.
  [[nodiscard]] plan::PlanRequest request(
      const CLI::App& cmd, const std::function<schedules::Schedule(schedules::Schedule)>& as_run = {}) const;

  // The flags that make these values again: the file or the generator's
  // name with K, V and M; the batch or b; recompute (with full, its method
  // and layers a checkpoint).
  [[nodiscard]] std::vector<std::string> args() const;
};

}  // namespace gpipe::tools
