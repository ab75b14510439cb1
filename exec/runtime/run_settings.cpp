#include "exec/runtime/run_settings.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/context_parallel.hpp"
#include "models/tensor_parallel.hpp"
#include "plan/microbatches.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"

namespace gpipe::exec {

using schedules::Action;
using schedules::ActionKind;

void check_threads_per_rank(int threads) {
  if (threads < 1 || threads > kMaxThreadsPerRank) {
    throw InputError(fmt::format("--threads-per-rank must be in [1, {}], got {}", kMaxThreadsPerRank, threads));
  }
}

void check_zero(int zero, int replicas, const models::Model& model, int num_stages) {
  if (zero == 0) return;
  if (zero < 0 || zero > 3) throw InputError(fmt::format("--zero {}: ZeRO's stages are 0, 1, 2 and 3", zero));
  if (zero > 1) {
    throw InputError(fmt::format(
        "--zero {}: the executor runs ZeRO 1 (each replica keeps its share of the optimizer state); ZeRO 2 and 3 "
        "shard the gradients and weights, which a pipeline's stage accumulates and reads whole over its "
        "micro-batches (gpipe-sim predicts them)",
        zero));
  }
  if (replicas < 2) {
    throw InputError(fmt::format("--zero {} shards over the data-parallel group: give --data-parallel 2 or more", zero));
  }
  if (model.tied && num_stages == 1) {
    throw InputError(fmt::format("--zero {}: model {} ties its embedding to its head, and on one stage the two "
                                 "copies' shares are not the same values: give 2 stages or more",
                                 zero, model.spec));
  }
}

void check_train_options(const TrainOptions& o, std::string_view backend, bool runs_split_backward) {
  const int num_layers = static_cast<int>(o.model.layers.size());
  if (o.steps < 1) throw InputError(fmt::format("--steps must be at least 1, got {}", o.steps));
  if (o.measured_steps < 1 || o.measured_steps > o.steps) {
    throw InputError(fmt::format("measured steps must be in [1, steps = {}], got {}", o.steps,
                                 o.measured_steps));
  }
  check_threads_per_rank(o.threads_per_rank);
  if (o.threads_per_rank > 1 && backend != "cpu") {
    throw InputError(fmt::format("--threads-per-rank applies to --backend cpu only (the {} backend was asked for {})",
                                 backend, o.threads_per_rank));
  }
  if (!(o.watchdog_seconds > 0)) {
    throw InputError(
        fmt::format("the watchdog needs a positive time, got {} s", o.watchdog_seconds));
  }
  if (o.partition.num_stages() != o.schedule.num_stages) {
    throw InputError(fmt::format("--partition {} has {} stages but the schedule has {}",
                                 models::to_string(o.partition), o.partition.num_stages(),
                                 o.schedule.num_stages));
  }
  for (int n : o.partition.layers_per_stage) {
    if (n < 1) {
      throw InputError(fmt::format("--partition {}: every stage needs at least one layer",
                                   models::to_string(o.partition)));
    }
  }
  if (o.partition.num_layers() != num_layers) {
    throw InputError(fmt::format("--partition {} covers {} layers but model {} has {}",
                                 models::to_string(o.partition), o.partition.num_layers(),
                                 o.model.spec, num_layers));
  }
  if (o.schedule.data_parallel < 1) {
    throw InputError(fmt::format("--data-parallel must be at least 1, got {}", o.schedule.data_parallel));
  }
  if (o.tensor_parallel < 1) {
    throw InputError(fmt::format("--tensor-parallel must be at least 1, got {}", o.tensor_parallel));
  }
  check_zero(o.zero, o.schedule.data_parallel, o.model, o.partition.num_stages());
  check_context_parallel(o, backend);
  // The split's own one-line errors: the family, T dividing the heads, the
  // kv heads and the FFN width.
  if (o.tensor_parallel > 1) (void)models::split_tensor_then_context(o.model, o.tensor_parallel);
  if (o.schedule.recompute == schedules::RecomputePolicy::full) {
    for (const auto& list : o.schedule.ranks) {
      for (const Action& a : list) {
        if (a.kind == ActionKind::I || a.kind == ActionKind::W) {
          throw InputError(fmt::format("schedule {}: --recompute full runs whole backwards only; {} is a split one's",
                                       o.schedule.name, to_string(a)));
        }
      }
    }
    if (!o.schedule.overlapped.empty()) {
      throw InputError(fmt::format("schedule {}: --recompute full does not run overlapped F&B pairs", o.schedule.name));
    }
  }
  if (runs_split_backward) return;
  for (const auto& list : o.schedule.ranks) {
    for (const Action& a : list) {
      if (a.kind == ActionKind::I || a.kind == ActionKind::W) {
        throw InputError(
            fmt::format("schedule {}: the {} executor runs F/B schedules; {} (a split "
                        "backward, I/W) is not supported",
                        o.schedule.name, backend, to_string(a)));
      }
    }
  }
}

void check_context_parallel(const TrainOptions& o, std::string_view backend) {
  const int c = o.model.context_parallel;
  if (c == 1) return;
  if (o.schedule.data_parallel % c != 0) {
    throw InputError(fmt::format("--context-parallel {}: the schedule reduces gradients over {} processes, not D x C "
                                 "(its data_parallel is the gradient group, as gpipe-sim plans it)",
                                 c, o.schedule.data_parallel));
  }
  if (backend != "cpu") {
    throw InputError(fmt::format("--context-parallel {}: the {} backend does not split sequences; run --backend cpu "
                                 "under mpirun or srun",
                                 c, backend));
  }
  if (o.zero > 0) {
    throw InputError(fmt::format("--context-parallel {} with --zero {}: the executor shards over replicas only",
                                 c, o.zero));
  }
  for (const models::Layer& layer : o.model.layers) {
    if (layer.kind != models::layer_kind::token_embedding && layer.kind != models::layer_kind::llama_block &&
        layer.kind != models::layer_kind::rms_head) {
      throw InputError(fmt::format("--context-parallel {}: the executor splits the llama family's sequences, not "
                                   "layer {} ({})",
                                   c, layer.name, layer.kind));
    }
  }
}

namespace {

// The fault must name an action the run will reach, or the test it serves would pass vacuously.
void check_fault(const FaultInjection& fault, const schedules::Schedule& lowered) {
  const std::string text = fmt::format("{}:{}", fault.rank.value, to_string(fault.action));
  if (fault.rank.value < 0 || fault.rank.value >= lowered.num_ranks) {
    throw InputError(fmt::format("--inject-fault {}: there is no rank {} (the schedule has {})",
                                 text, fault.rank.value, lowered.num_ranks));
  }
  const auto& list = lowered.actions(fault.rank);
  if (std::find(list.begin(), list.end(), fault.action) == list.end()) {
    throw InputError(fmt::format("--inject-fault {}: rank {} runs no action {}", text,
                                 fault.rank.value, to_string(fault.action)));
  }
}

}  // namespace

schedules::Schedule lower_checked(const TrainOptions& o) {
  // The model says whether the pipeline's ends share a matrix, whatever
  // profile planned the run.
  schedules::Schedule schedule = o.schedule;
  if (!schedule.is_lowered()) schedule.tied_embedding = o.model.tied;
  schedules::validate(schedule);
  schedules::Schedule lowered = schedules::lower(schedule);
  if (o.fault) check_fault(*o.fault, lowered);
  return lowered;
}

std::size_t median_step(const std::vector<timelines::Timeline>& steps) {
  std::vector<std::size_t> order(steps.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return timelines::makespan_ns(steps[a]) < timelines::makespan_ns(steps[b]);
  });
  return order[(order.size() - 1) / 2];
}

RunSettings make_run_settings(const TrainOptions& o, const schedules::Schedule& lowered) {
  RunSettings settings;
  settings.model = &o.model;
  settings.schedule = &lowered;
  settings.batch = o.batch;
  settings.replicas = o.replicas();
  settings.tensor_parallel = o.tensor_parallel;
  settings.context_parallel = o.model.context_parallel;
  settings.zero = o.zero;
  settings.microbatch_sizes = plan::split_batch(o.batch, lowered.num_microbatches);
  std::int64_t offset = 0;
  for (int size : settings.microbatch_sizes) {
    settings.microbatch_offsets.push_back(offset);
    offset += size;
  }
  settings.recomputed.assign(
      static_cast<std::size_t>(lowered.num_stages),
      std::vector<bool>(static_cast<std::size_t>(lowered.num_microbatches), false));
  for (const auto& list : lowered.ranks) {
    for (const Action& a : list) {
      if (a.kind == ActionKind::R) settings.recomputed[a.stage.at()][a.microbatch.at()] = true;
    }
  }
  settings.steps = o.steps;
  settings.measured_steps = o.measured_steps;
  settings.seed = o.seed;
  settings.check_finite = o.check_finite;
  settings.fault = o.fault;
  return settings;
}

}  // namespace gpipe::exec
