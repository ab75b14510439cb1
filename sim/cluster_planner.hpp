// The planner (`gpipe-sim plan`): every way to train one model on a cluster
// of N GPUs, G to a node, for a global batch of GB samples. It enumerates
//   T  tensor parallelism, each divisor of G the model's heads, kv heads and
//      FFN allow (sequence parallel above 1, unless asked otherwise);
//   C  context parallelism, each of a list (default 1 alone): each
//      sequence split over C GPUs beside the T of a stage
//      (models/context_parallel.hpp), T x C a divisor or a multiple of G;
//   K  pipeline stages, each divisor of N / (T C) (or those of a list);
//   D  = N / (T C K) replicas, the global batch split evenly over them (only
//      those of a list, when one is given);
//   b  the micro-batch size (M = GB / D / b micro-batches), the schedule (with
//      its own stages per rank V, or, for a family that takes a V of one's
//      choice, each V of a list), the recompute choice (a policy, or
//      selective: RecomputeChoice) and the ZeRO stage;
// A list of one value each pins one configuration: a published run as it was run.
// and predicts each (sim/scenario.hpp) from the analytic profile of the model
// split over T (models/tensor_parallel.hpp), laid out on the cluster
// (plan/cluster.hpp). What cannot exist is kept as a row with the reason;
// what does not fit the device's memory is kept, marked.
// Per row, besides the step:
//   tokens/s          GB x S / step (S the model's sequence; samples for a model without one)
//   TFLOP/s per GPU   the model's FLOPs a step (forward and backward of every
//                     layer, whole, for GB samples: no recompute, no
//                     collectives) / step / N
//   MFU               that over the device's dense peak in the dtype
//   bubble share      the pipeline's idle time in the step without data
//                     parallelism (1 - busy / (K step)), over the step
//   TP share          the most any rank spends in its tensor-parallel
//                     collectives a step (every pass's), over the step
//   DP share          what data parallelism adds to the step (its exposed
//                     reductions, ZeRO's gathers, less its sharded optimizer
//                     step), over the step: (step - step with D = 1) / step
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "models/optimizer.hpp"
#include "profiles/analytic.hpp"
#include "profiles/collectives.hpp"
#include "profiles/device.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::sim {

// A recompute choice of the plan: a policy, or Korthikanti et al.'s
// selective recompute ("selective": the policy never, with every block
// running its attention core again in its backward, the model's
// recompute=core_attn; models/recompute_modules.hpp).
struct RecomputeChoice {
  schedules::RecomputePolicy policy = schedules::RecomputePolicy::never;
  bool selective = false;
  RecomputeChoice() = default;
  RecomputeChoice(schedules::RecomputePolicy p) : policy(p) {}  // NOLINT: a policy is a choice
  static RecomputeChoice selective_recompute() {
    RecomputeChoice c;
    c.selective = true;
    return c;
  }
  bool operator==(const RecomputeChoice&) const = default;
};
// "selective", or the policy's name.
[[nodiscard]] std::string to_string(const RecomputeChoice& choice);
// A policy's name or "selective"; nullopt otherwise.
[[nodiscard]] std::optional<RecomputeChoice> parse_recompute_choice(std::string_view name);
// The names parse_recompute_choice() accepts: the policies', then "selective".
[[nodiscard]] std::vector<std::string> recompute_choice_names();

struct ClusterPlanRequest {
  models::Model model;  // whole
  profiles::Device device;
  models::DType dtype = models::DType::bf16;
  profiles::AnalyticOptions analytic;
  int gpus = 1;           // N
  int gpus_per_node = 8;  // G
  std::int64_t global_batch = 1;  // GB samples
  std::vector<int> tensor_parallel;  // empty: every divisor of G
  std::vector<int> context_parallel{1};  // C
  models::ContextParallelForm context_form = models::ContextParallelForm::all_gather;
  std::vector<int> pipeline;         // K; empty: every divisor of N / T
  std::vector<int> data_parallel;    // D; empty: whatever N / (T K) is
  std::vector<int> stages_per_rank;  // V of the interleaved families; empty: each schedule's own
  bool sequence_parallel = true;     // with T > 1
  std::vector<int> micro_batch_sizes{1, 2, 4, 8};
  std::vector<std::string> schedules{"1f1b", "interleaved-1f1b"};
  std::vector<RecomputeChoice> recompute{schedules::RecomputePolicy::never, schedules::RecomputePolicy::full};
  std::vector<int> zero{0, 1};
  profiles::CollectiveLink inter_node{.latency_us = 5, .bandwidth_GBps = 50};
  bool scatter_gather = true;  // of P2P between nodes without sequence parallelism (sim/placed_link.hpp)
  bool reduce_after_backward = false;  // plan::PlanRequest::reduce_after_backward
  bool fp32_main_grads = false;        // plan::PlanRequest::fp32_main_grads
  bool overlap_param_gather = false;   // plan::PlanRequest::overlap_param_gather
  // Megatron-LM's --tp-comm-overlap: analytic.tp_comm_overlap (profiles/analytic.hpp).
  models::Optimizer optimizer = models::Optimizer::adamw;
};

struct ClusterPlanRow {
  int tensor = 1, pipeline = 1, data = 1;
  int context = 1;  // C
  int stages_per_rank = 0, microbatches = 0, micro_batch_size = 0;
  std::string schedule;
  RecomputeChoice recompute;
  int zero = 0;
  // "ok", "over memory" (simulated, but some GPU needs more than the
  // device's memory less its reserve) or "skipped" (cannot exist: `reason`).
  std::string status;
  std::string reason;
  double step_us = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  std::int64_t peak_memory_bytes = 0;  // the most any GPU holds: static and activations
  double bubble_share = 0;
  double tensor_parallel_share = 0;
  double data_parallel_share = 0;

  [[nodiscard]] bool ok() const { return status == "ok"; }
};

// Called from the calling thread with (configurations done, total).
using ClusterPlanProgress = std::function<void(std::size_t done, std::size_t total)>;

// Every configuration, in order of T, C, K, b, schedule, V, recompute, ZeRO.
// InputError, naming the flag, for N or G < 1, N not whole nodes, GB < 1, an
// empty or invalid list.
[[nodiscard]] std::vector<ClusterPlanRow> plan_cluster(const ClusterPlanRequest& request,
                                                       const ClusterPlanProgress& progress = {});

// The CSV of every row (plots/plan_heatmap.py reads it), with its head line.
[[nodiscard]] std::string cluster_plan_csv(const std::vector<ClusterPlanRow>& rows);

}  // namespace gpipe::sim
