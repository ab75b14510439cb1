#include "plan/plan.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/model.hpp"
#include "models/model_spec.hpp"
#include "plan/microbatches.hpp"
#include "profiles/interpolate.hpp"

namespace gpipe::plan {
namespace {

// The GPUs that hold a stage's same weights and reduce its gradients: the D
// replicas, and with context parallelism each replica's C GPUs of the
// sequence (models/context_parallel.hpp). ZeRO shards over them.
int gradient_group(const profiles::Profile& profile, const PlanRequest& r) {
  return r.data_parallel * profile.context_parallel;
}

void check_stages(const profiles::Profile& profile, const PlanRequest& r) {
  const int num_layers = static_cast<int>(profile.layers.size());
  if (r.given && r.given->num_stages > num_layers) {
    throw InputError(fmt::format("schedule {} has {} stages, more than the {} layers of the profile: "
                                 "every stage needs at least one layer",
                                 r.schedule, r.given->num_stages, num_layers));
  }
  if (r.given && r.batch > 0 && r.batch < r.microbatches) {
    throw InputError(fmt::format("--batch {} is fewer samples than the {} micro-batches of schedule {}: "
                                 "every micro-batch needs a sample",
                                 r.batch, r.microbatches, r.schedule));
  }
  if (r.stages < 1) throw InputError(fmt::format("--stages must be at least 1, got {}", r.stages));
  if (r.stages > num_layers) {
    throw InputError(fmt::format("--stages {} exceeds the {} layers of the profile: every stage "
                                 "needs at least one layer",
                                 r.stages, num_layers));
  }
}

// The schedule cuts the model into K x V stages; each needs a layer.
void check_stages(const profiles::Profile& profile, const schedules::Schedule& s) {
  const int num_layers = static_cast<int>(profile.layers.size());
  if (s.num_stages > num_layers) {
    throw InputError(fmt::format("{} with --stages {} has {} stages ({} per rank), more than the {} "
                                 "layers of the profile: every stage needs at least one layer",
                                 s.name, s.num_ranks, s.num_stages, s.num_stages / s.num_ranks,
                                 num_layers));
  }
}

// Per-layer cost (forward + backward, ns) at micro-batch size b: what the
// balanced partitioner weighs.
std::vector<std::int64_t> layer_costs_ns(const profiles::Profile& profile, int b) {
  std::vector<std::int64_t> costs;
  costs.reserve(profile.layers.size());
  for (const auto& layer : profile.layers) {
    const profiles::LayerCost c = profiles::cost_at(layer, b);
    costs.push_back(std::llround((c.fwd_us + c.bwd_us) * 1e3));
  }
  return costs;
}

std::vector<std::int64_t> static_bytes_per_rank(const profiles::Profile& profile,
                                                const models::Partition& partition,
                                                const schedules::Schedule& schedule, const PlanRequest& r) {
  const std::int64_t per_param = models::static_bytes_per_param(r.optimizer, profile.dtype, r.fp32_main_grads);
  const std::int64_t element = models::bytes_per_element(profile.dtype);
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(schedule.num_ranks), 0);
  for (int st = 0; st < partition.num_stages(); ++st) {
    std::int64_t params = 0;
    for (int l = partition.first_layer(st); l < partition.end_layer(st); ++l) {
      params += profile.layers[static_cast<std::size_t>(l)].param_bytes / element;
    }
    std::int64_t& rank_bytes = bytes[schedule.rank_of(schedules::Stage{st}).at()];
    std::int64_t whole = 0;
    if (__builtin_mul_overflow(params, per_param, &whole) || __builtin_add_overflow(rank_bytes, whole, &rank_bytes)) {
      throw InputError(fmt::format("stage {}: {} parameters, whose weights, gradients and optimizer state come "
                                   "to more bytes than the 2^63 the engine counts",
                                   st, params));
    }
    // ZeRO shards within what fits unsharded.
    rank_bytes +=
        models::static_bytes(r.optimizer, profile.dtype, params, r.zero, gradient_group(profile, r), r.fp32_main_grads).total() -
        whole;
  }
  return bytes;
}

// The given schedule as the plan runs it: a compute-only one with the
// request's recompute policy, a lowered one with its own.
schedules::Schedule given_schedule(const PlanRequest& r) {
  schedules::Schedule s = *r.given;
  if (!s.is_lowered()) {
    s.recompute = r.recompute;
  } else if (r.recompute != schedules::RecomputePolicy::never && r.recompute != s.recompute) {
    throw InputError(fmt::format("--recompute {}: schedule {} is lowered already, with recompute {}",
                                 schedules::to_string(r.recompute), s.name, schedules::to_string(s.recompute)));
  }
  return s;
}

// Whether `s` splits a backward into I and W, or overlaps F with B.
bool splits_backward(const schedules::Schedule& s) {
  bool split = !s.overlapped.empty();
  for (const auto& list : s.ranks) {
    for (const auto& a : list) split = split || a.kind == schedules::ActionKind::I || a.kind == schedules::ActionKind::W;
  }
  return split;
}

// A split backward's W would keep what I rebuilt of the modules a block
// recomputes (models/recompute_modules.hpp), more than the block's stash,
// which neither side models yet.
void check_recomputed_modules(const profiles::Profile& profile, const schedules::Schedule& s) {
  // The profile's spec first: it is read without a scan of the schedule (a sweep plans millions).
  if (const models::RecomputeModules modules = recompute_modules_of(profile); modules.any() && splits_backward(s)) {
    throw InputError(fmt::format("recompute={} (the profile's model): schedule {} splits its backward (I and W) or "
                                 "overlaps F with B, which module recompute does not run yet; use a schedule with "
                                 "whole backwards (gpipe, 1f1b, interleaved-1f1b, ...)",
                                 models::to_string(modules), s.name));
  }
}

// Megatron's full recompute as this schedule can run it: its backward whole
// (a split one's W would keep what I rebuilt, which neither side models yet).
models::Checkpointing checkpointing_of(const schedules::Schedule& s, const PlanRequest& r) {
  if (r.checkpointing.num_layers < 1) {
    throw InputError(fmt::format("--recompute-num-layers {}: give 1 or more", r.checkpointing.num_layers));
  }
  if (splits_backward(s)) {
    throw InputError(fmt::format("--recompute full: schedule {} splits its backward (I and W) or overlaps F with B, "
                                 "which full recompute does not run yet; use a schedule with whole backwards "
                                 "(gpipe, 1f1b, interleaved-1f1b, ...)",
                                 s.name));
  }
  return r.checkpointing;
}

// Everything after the micro-batches, which the callers make in their own
// order. partition_of(spec, micro-batch size, stage count) is the partition:
// made here, or kept by a Planner.
void check_data_parallel(const profiles::Profile& profile, const PlanRequest& r) {
  if (r.data_parallel < 1) throw InputError(fmt::format("--data-parallel {}: give 1 or more replicas", r.data_parallel));
  if (r.zero < 0 || r.zero > 3) throw InputError(fmt::format("--zero {}: ZeRO's stages are 0, 1, 2 and 3", r.zero));
  if (r.zero > 0 && gradient_group(profile, r) == 1) {
    throw InputError(
        fmt::format("--zero {} shards over the data-parallel group: give --data-parallel 2 or more", r.zero));
  }
}

template <class PartitionOf>
Plan plan_with(const profiles::Profile& profile, const PlanRequest& r, std::vector<int> sizes,
               const PartitionOf& partition_of) {
  assert(static_cast<int>(sizes.size()) == r.microbatches && "the sizes of another request");
  if (profile.workload == "inference") {
    throw InputError("the profile was measured for inference (forwards alone, gpipe-run profile --workload "
                     "inference) and prices no backward: profile the model for training to plan a training run");
  }
  for (const profiles::LayerProfile& layer : profile.layers) {
    for (const profiles::ProfileSample& s : layer.samples) {
      if (s.state_bytes.value_or(0) == 0) continue;
      throw InputError(fmt::format("layer {} ({}) keeps state from one item of an inference stream to the next "
                                   "(dit's cache=1): a training step has no stream; drop cache=1, or serve it "
                                   "with --workload inference",
                                   layer.name, layer.kind));
    }
  }
  check_data_parallel(profile, r);
  Plan p;
  p.batch = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  p.microbatch_sizes = std::move(sizes);
  if (r.given) {
    p.schedule = given_schedule(r);
  } else {
    schedules::ScheduleOptions options;
    options.num_ranks = r.stages;
    if (r.stages_per_rank > 0) options.stages_per_rank = r.stages_per_rank;
    options.num_microbatches = r.microbatches;
    options.backward_order = r.backward_order;
    options.recompute = r.recompute;
    p.schedule = schedules::generate(r.schedule, options);
  }
  check_stages(profile, p.schedule);
  check_recomputed_modules(profile, p.schedule);
  if (p.schedule.recompute == schedules::RecomputePolicy::full) p.checkpointing = checkpointing_of(p.schedule, r);
  // A generator's schedule is compute-only; only a given file may be lowered (one scan of it).
  const bool lowered = r.given && p.schedule.is_lowered();
  // A tied embedding's first and last stages exchange their gradient
  // (schedules/tied_gradient.hpp); a lowered file keeps what it lists.
  if (!lowered) p.schedule.tied_embedding = profile.tied_bytes() > 0;
  p.partition = partition_of(r.partition, p.microbatch_sizes.front(), p.schedule.num_stages);
  p.schedule.data_parallel = gradient_group(profile, r);
  // A file's own setting stays; the request may ask for it too.
  if (!lowered) p.schedule.reduce_after_backward = p.schedule.reduce_after_backward || r.reduce_after_backward;
  p.static_bytes = static_bytes_per_rank(profile, p.partition, p.schedule, r);
  return p;
}

}  // namespace

models::RecomputeModules recompute_modules_of(const profiles::Profile& profile) {
  if (profile.model.find("recompute=") == std::string::npos) return {};
  try {
    return models::parse_model(profile.model).recompute_modules;
  } catch (const InputError&) {
    return {};  // not a spec gpipe knows: it recomputes nothing gpipe knows of
  }
}

PlanRequest for_schedule(PlanRequest base, schedules::Schedule schedule) {
  base.schedule = schedule.name;
  base.stages = schedule.num_ranks;
  // V where every rank holds as many stages; 0 (unsaid) for an uneven file.
  base.stages_per_rank =
      schedule.num_stages % std::max(schedule.num_ranks, 1) == 0 ? schedule.num_stages / std::max(schedule.num_ranks, 1) : 0;
  base.microbatches = schedule.num_microbatches;
  base.given = std::make_shared<const schedules::Schedule>(std::move(schedule));
  return base;
}

namespace {

// The partition as make_plan makes it, afresh.
auto made_partition(const profiles::Profile& profile) {
  return [&profile](const models::PartitionSpec& spec, int b, int num_stages) {
    return models::make_partition(spec, layer_costs_ns(profile, b), num_stages);
  };
}

}  // namespace

Plan make_plan(const profiles::Profile& profile, const PlanRequest& request) {
  check_stages(profile, request);
  return plan_with(profile, request,
                   microbatch_sizes(request.microbatches, request.batch, request.micro_batch_size),
                   made_partition(profile));
}

Plan make_plan(const profiles::Profile& profile, const PlanRequest& request,
               std::vector<int> microbatch_sizes) {
  check_stages(profile, request);
  return plan_with(profile, request, std::move(microbatch_sizes), made_partition(profile));
}

Plan Planner::make(const PlanRequest& request) {
  check_stages(profile_, request);
  std::vector<int> sizes = microbatch_sizes(request.microbatches, request.batch, request.micro_batch_size);
  return plan_with(profile_, request, std::move(sizes),
                   [this](const models::PartitionSpec& spec, int b, int num_stages) {
                     return partition(spec, b, num_stages);
                   });
}

models::Partition Planner::partition(const models::PartitionSpec& spec, int micro_batch_size, int num_stages) {
  auto key = std::tuple{static_cast<int>(spec.method), spec.counts, micro_batch_size, num_stages};
  if (const auto it = partitions_.find(key); it != partitions_.end()) return it->second;
  models::Partition made = models::make_partition(spec, layer_costs_ns(profile_, micro_batch_size), num_stages);
  if (partitions_.size() >= kMaxKept) partitions_.clear();
  partitions_.emplace(std::move(key), made);
  return made;
}

std::shared_ptr<const std::vector<profiles::StageCost>> Planner::stage_costs(
    std::span<const int> layers_per_stage, int micro_batch_size,
    const std::optional<models::Checkpointing>& checkpointing) {
  // (0, 0) without checkpoints, else (method + 1, N).
  const int method = checkpointing ? static_cast<int>(checkpointing->method) + 1 : 0;
  const int per_chunk = checkpointing ? checkpointing->num_layers : 0;
  auto key = std::tuple{std::vector<int>(layers_per_stage.begin(), layers_per_stage.end()), micro_batch_size,
                        method, per_chunk};
  if (const auto it = stage_costs_.find(key); it != stage_costs_.end()) return it->second;
  auto made = std::make_shared<const std::vector<profiles::StageCost>>(
      profiles::stage_costs(profile_, layers_per_stage, micro_batch_size, checkpointing));
  if (stage_costs_.size() >= kMaxKept) stage_costs_.clear();
  stage_costs_.emplace(std::move(key), made);
  return made;
}

}  // namespace gpipe::plan
