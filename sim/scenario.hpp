// One configuration to predict: a plan request (a profile cut into K stages, a
// mini-batch split into M micro-batches, a schedule, generated or given, and a
// recompute policy) and what the simulator assumes beyond it: the link, how
// messages share it, how overlapped pairs run, and jitter. `gpipe-sim run` predicts one; `gpipe-sim sweep` a grid of them.
// A prediction is the plan (plan/plan.hpp), made exactly as `gpipe-run train`
// makes it, and its simulated timeline.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "plan/cluster.hpp"
#include "plan/plan.hpp"
#include "profiles/collectives.hpp"
#include "profiles/profile.hpp"
#include "sim/data_parallel.hpp"
#include "sim/link_model.hpp"
#include "sim/stochastic.hpp"
#include "timelines/metrics.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

// Where a plan's GPUs sit (plan/cluster.hpp): with it, each rank pair on two
// nodes talks over `inter_node`, and a data-parallel group that spans nodes
// reduces over it too; the rest over the profile's link.
struct ClusterConditions {
  std::optional<int> gpus;  // N, which must be T x K x D; default: that product
  int gpus_per_node = 8;    // G
  profiles::CollectiveLink inter_node{.latency_us = 5, .bandwidth_GBps = 50};
  // Megatron's scatter/gather of the activations between nodes, where a
  // stage's T GPUs each hold them whole (T > 1 without sequence parallelism:
  // sim/placed_link.hpp). Megatron-LM does it by default.
  bool scatter_gather = true;
};

// What a prediction assumes beyond its plan; the same for every row of a sweep.
struct Conditions {
  std::optional<double> link_latency_us;  // override the profile's link
  std::optional<double> link_bandwidth_GBps;
  LinkSharing link_sharing = LinkSharing::fifo;  // how messages on one link share it
  std::optional<double> overlap_share;           // overlapped pairs concurrently (overlap_model.hpp)
  Jitter jitter;                                 // cv > 0: also run the stochastic mode
  // Memory per rank (static + activations): the budget --schedule zb-auto
  // searches within (sim/zb_auto_plan.hpp); other schedules are not bound by it.
  std::optional<std::int64_t> memory_limit_bytes;
  // With --data-parallel D > 1: each GPU's link in a stage's data-parallel
  // group (default: the profile's link) and the gradient bucket
  // (sim/data_parallel.hpp).
  std::optional<profiles::CollectiveLink> data_parallel_link;
  std::int64_t gradient_bucket_bytes = models::kGradientBucketBytes;
  // How many of the D replicas compute on the one machine whose sharing the
  // profile's contention describes (sim/contention.hpp): D for CPU
  // processes on one node (gpipe-run validate --data-parallel), 1 where each
  // replica has devices of its own.
  int replicas_sharing_machine = 1;
  // The tensor-parallel group asked for (--tensor-parallel, --sequence-parallel):
  // the profile must be one GPU's of such a group (its tensor_parallel).
  std::optional<int> tensor_parallel;
  std::optional<bool> sequence_parallel;
  // The context-parallel group asked for (--context-parallel): the profile's.
  std::optional<int> context_parallel;
  std::optional<ClusterConditions> cluster;  // none: every link the profile's
  // A fixed cost per action of these kinds on top of the profile's
  // (sim/action_overhead.hpp: a framework's own time); empty: none.
  std::map<schedules::ActionKind, std::int64_t> action_overhead_ns;
  // The same per layer of the action's stage (a runtime's cost per op,
  // sim/runtime_overhead.hpp); empty: none.
  std::map<schedules::ActionKind, std::int64_t> action_overhead_per_layer_ns;
};

struct Scenario {
  plan::PlanRequest request;
  Conditions conditions;
};

struct Prediction {
  plan::Plan plan;
  double link_latency_us = 0;
  double link_bandwidth_GBps = 0;
  timelines::Timeline timeline;                // empty when not recorded
  timelines::Metrics metrics;                  // the deterministic run
  std::optional<StochasticResult> stochastic;  // when the jitter's cv > 0
  std::string searched;                        // zb-auto: the candidate its search kept
  // With data parallelism: the link a stage's group reduces over; with a
  // cluster, where the GPUs sit (ClusterPlacement::describe()).
  std::optional<profiles::CollectiveLink> data_parallel_link;
  std::string placement;
};

// The link a prediction assumes: the profile's, with the conditions'
// overrides. Throws InputError naming --link-latency-us or
// --link-bandwidth-gbps for a value out of range.
[[nodiscard]] UniformLink link_of(const profiles::Profile& profile, const Conditions& conditions);

// plan::make_plan, then the simulation; for zb-auto, the plan of the search
// over stage layouts and schedules (sim/zb_auto_plan.hpp). Throws InputError for a configuration
// that cannot exist (more stages than layers, M > N, a partition that does not
// sum, a bad --jitter or --runs, a bad link, zb-auto with no schedule within
// the memory limit, ...), naming the flag.
[[nodiscard]] Prediction predict(const profiles::Profile& profile, const Scenario& scenario,
                                 bool record_timeline = true);
// The same with the plan and the stage costs from `planner` (one per thread),
// which keeps what the predictions of one profile share: a sweep's.
[[nodiscard]] Prediction predict(plan::Planner& planner, const Scenario& scenario, bool record_timeline = true);

}  // namespace gpipe::sim
