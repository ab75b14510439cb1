// Planning a pipeline run without simulating it. From a request (which
// schedule, K stages, M micro-batches of a batch, how to partition) and a
// profile of the model: the layers of each stage (balanced on the profile's
// per-layer costs), the generated schedule, the micro-batch sizes and the
// static memory of each rank. `gpipe-run train` runs a plan; the simulator
// predicts one (sim::predict is make_plan, then simulate), so a run and its
// prediction describe the same pipeline.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/checkpointing.hpp"
#include "models/recompute_modules.hpp"
#include "models/optimizer.hpp"
#include "models/partition.hpp"
#include "profiles/profile.hpp"
#include "profiles/stage_costs.hpp"
#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::plan {

struct PlanRequest {
  std::string schedule = "gpipe";  // a generator's name, or the given schedule's
  // A schedule given whole (gpipe-sim --schedule-file) instead of generated;
  // `schedule`, `stages` (its ranks), `stages_per_rank` and `microbatches`
  // then describe it (for_schedule).
  // A compute-only one is lowered with `recompute`; a lowered one keeps its own.
  std::shared_ptr<const schedules::Schedule> given;
  schedules::BackwardOrder backward_order = schedules::BackwardOrder::reverse;
  schedules::RecomputePolicy recompute = schedules::RecomputePolicy::never;
  // With recompute full (Megatron's per-layer checkpoints): how the blocks
  // are cut into checkpointed chunks (models/checkpointing.hpp).
  models::Checkpointing checkpointing;
  int stages = 1;           // K: ranks
  int stages_per_rank = 0;  // V: the model is cut into K x V stages; 0 = the family's own
  int microbatches = 1;
  std::int64_t batch = 0;    // N samples, split over the micro-batches; or
  int micro_batch_size = 0;  // b samples in every micro-batch (when batch is 0)
  models::PartitionSpec partition;
  models::Optimizer optimizer = models::Optimizer::adamw;  // what static_bytes counts
  // D replicas of this pipeline, each stage's gradients reduced over the
  // same stage of every replica (schedules/gradient_reduction.hpp), and
  // ZeRO's stage (0 to 3) sharding static memory over them; with a
  // context-parallel profile over D x C (Schedule::data_parallel holds it).
  int data_parallel = 1;
  int zero = 0;
  // Every stage's reduction after its rank's last backward, as Megatron-LM
  // without --overlap-grad-reduce (Schedule::reduce_after_backward).
  bool reduce_after_backward = false;
  // Gradients held and reduced in fp32 whatever the dtype (models/optimizer.hpp):
  // Megatron-LM's main_grad buffers, Llama 3's fp32 accumulation.
  bool fp32_main_grads = false;
  // ZeRO 1 and 2's gather of the weights after STEP beside the next step's
  // first forward, as Megatron-LM's --overlap-param-gather (sim/data_parallel.hpp).
  bool overlap_param_gather = false;
};

struct Plan {
  schedules::Schedule schedule;        // generated (compute actions only, not lowered), or the given one
  models::Partition partition;
  std::vector<int> microbatch_sizes;  // samples per micro-batch, largest first
  std::int64_t batch = 0;             // their sum
  // Per rank: parameters, gradients and optimizer state (models/optimizer.hpp)
  // in the profile's dtype, sharded by ZeRO over the data-parallel group
  // (models::static_bytes); one GPU's with a tensor-parallel profile.
  std::vector<std::int64_t> static_bytes;
  // The checkpoints the stages keep under recompute full; nullopt otherwise.
  // The costs (profiles::stage_costs) and the executor's stages take them.
  std::optional<models::Checkpointing> checkpointing;
};

// A request for `schedule` as it stands (a file's): its name, stages and M,
// everything else from `base`.
[[nodiscard]] PlanRequest for_schedule(PlanRequest base, schedules::Schedule schedule);

// The modules the blocks of the profile's model recompute (its spec's
// recompute=, models/recompute_modules.hpp); none for a spec gpipe does not know.
[[nodiscard]] models::RecomputeModules recompute_modules_of(const profiles::Profile& profile);

// Throws InputError, naming the flag, for a request that cannot exist: K < 1,
// more stages (K x V) than the profile has layers, M < 1 or M > N, neither N
// nor b given, a partition that does not fit, an unknown schedule or one that
// refuses the K, V and M asked, a recompute policy for a given schedule
// lowered with another, --data-parallel < 1, --zero outside 0..3 or above 0
// with one replica; and for a profile whose dtype has no known size.
[[nodiscard]] Plan make_plan(const profiles::Profile& profile, const PlanRequest& request);

// The same with the request's micro-batch sizes made already (plan/microbatches.hpp,
// from the request's M and N or b), for a caller that needed them before it
// had a profile, to build one at those sizes: the batch is split once.
[[nodiscard]] Plan make_plan(const profiles::Profile& profile, const PlanRequest& request,
                             std::vector<int> microbatch_sizes);

// make_plan for many requests of one profile (a sweep's): it keeps what they
// share, the partition of each (spec, micro-batch size, stage count) -- the
// balanced one is an O(K L^2) search, a sweep asks for each thousands of
// times -- and the stage costs of each (partition, micro-batch size). Each
// is made as make_plan and profiles::stage_costs make it, and kept only when
// made, so the plans, the costs and the errors are theirs. One per thread.
class Planner {
 public:
  explicit Planner(const profiles::Profile& profile) : profile_(profile) {}

  [[nodiscard]] const profiles::Profile& profile() const { return profile_; }
  // make_plan(profile(), request).
  [[nodiscard]] Plan make(const PlanRequest& request);
  // profiles::stage_costs(profile(), layers_per_stage, micro_batch_size,
  // checkpointing), shared with the planner's table.
  [[nodiscard]] std::shared_ptr<const std::vector<profiles::StageCost>> stage_costs(
      std::span<const int> layers_per_stage, int micro_batch_size,
      const std::optional<models::Checkpointing>& checkpointing = std::nullopt);

 private:
  [[nodiscard]] models::Partition partition(const models::PartitionSpec& spec, int micro_batch_size,
                                            int num_stages);

  // A bound on what is kept: past it a table starts over (a sweep's keys
  // number in the thousands).
  static constexpr std::size_t kMaxKept = 4096;
  const profiles::Profile& profile_;
  std::map<std::tuple<int, std::vector<int>, int, int>, models::Partition> partitions_;
  std::map<std::tuple<std::vector<int>, int, int, int>, std::shared_ptr<const std::vector<profiles::StageCost>>>
      stage_costs_;
};

}  // namespace gpipe::plan
