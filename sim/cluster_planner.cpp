#include "sim/cluster_planner.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/checkpointing.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "plan/plan.hpp"
#include "profiles/stage_costs.hpp"
#include "schedules/generate.hpp"
#include "sim/scenario.hpp"

namespace gpipe::sim {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

void check(const ClusterPlanRequest& r) {
  if (r.gpus < 1) throw InputError(fmt::format("--gpus {}: a cluster has at least one GPU", r.gpus));
  if (r.gpus_per_node < 1) throw InputError(fmt::format("--gpus-per-node {}: a node has at least one GPU", r.gpus_per_node));
  if (r.global_batch < 1) throw InputError(fmt::format("--global-batch {}: give 1 or more samples", r.global_batch));
  const auto nonempty = [](bool empty, const char* flag) {
    if (empty) throw InputError(fmt::format("{}: give at least one value", flag));
  };
  nonempty(r.micro_batch_sizes.empty(), "--micro-batch-sizes");
  nonempty(r.schedules.empty(), "--schedules");
  nonempty(r.recompute.empty(), "--recompute");
  nonempty(r.zero.empty(), "--zero");
  for (const int b : r.micro_batch_sizes) {
    if (b < 1) throw InputError(fmt::format("--micro-batch-sizes: {} is not a size of 1 or more", b));
  }
  for (const int z : r.zero) {
    if (z < 0 || z > 3) throw InputError(fmt::format("--zero {}: ZeRO's stages are 0, 1, 2 and 3", z));
  }
  for (const int t : r.tensor_parallel) {
    if (t < 1) throw InputError(fmt::format("--tensor-parallel {}: give 1 or more GPUs a stage", t));
  }
  nonempty(r.context_parallel.empty(), "--context-parallel");
  for (const int c : r.context_parallel) {
    if (c < 1) throw InputError(fmt::format("--context-parallel {}: give 1 or more GPUs a sequence", c));
  }
  for (const int k : r.pipeline) {
    if (k < 1) throw InputError(fmt::format("--pipeline {}: give 1 or more stages", k));
  }
  for (const int d : r.data_parallel) {
    if (d < 1) throw InputError(fmt::format("--data-parallel {}: give 1 or more replicas", d));
  }
  for (const int v : r.stages_per_rank) {
    if (v < 1) throw InputError(fmt::format("--stages-per-rank {}: give 1 or more stages a rank", v));
  }
}

// A pipeline depth K to try with T GPUs a stage, or why it cannot be one.
struct Depth {
  int k = 0;
  std::string error;  // empty: K divides N / T
};

// The depths to try with W = T x C GPUs a stage: --pipeline's (each that
// does not divide N / W kept, with why), or every divisor of N / W; of those,
// only the ones whose D = N / (W K) --data-parallel's list holds, when there is one.
std::vector<Depth> depths_for(const ClusterPlanRequest& r, int t, int c = 1) {
  const int w = t * c;
  std::vector<Depth> out;
  for (const int k : r.pipeline.empty() ? divisors(r.gpus / w) : r.pipeline) {
    if ((r.gpus / w) % k != 0) {
      out.push_back({k, c == 1 ? fmt::format("--pipeline {} does not divide N / T = {} ({} GPUs, T = {})", k,
                                             r.gpus / w, r.gpus, t)
                               : fmt::format("--pipeline {} does not divide N / (T C) = {} ({} GPUs, T = {}, C = {})",
                                             k, r.gpus / w, r.gpus, t, c)});
      continue;
    }
    const int d = r.gpus / (w * k);
    if (!r.data_parallel.empty() &&
        std::find(r.data_parallel.begin(), r.data_parallel.end(), d) == r.data_parallel.end()) {
      continue;
    }
    out.push_back({k, {}});
  }
  return out;
}

// The stages per rank to try with `schedule`: the list's for a family that
// takes a V of the caller's choice (the interleaved ones), else the family's own (0).
std::vector<int> stages_per_rank_for(const ClusterPlanRequest& r, const std::string& schedule) {
  if (r.stages_per_rank.empty() || !schedules::takes_stages_per_rank(schedule)) return {0};
  return r.stages_per_rank;
}

double flops_per_sample(const models::Model& model) {
  double flops = 0;
  for (const models::Layer& l : model.layers) flops += l.fwd_flops + l.bwd_input_flops + l.bwd_weight_flops;
  return flops;
}

// The most any rank spends in its tensor-parallel collectives a step: every
// forward (and recompute) and backward of each of its stages' layers.
double tensor_parallel_us(const ClusterPlanRequest& r, const models::Model& split, const Prediction& p,
                          int micro_batch_size) {
  if (split.tensor_parallel == 1) return 0;
  const schedules::Schedule& s = p.plan.schedule;
  std::vector<double> per_rank(static_cast<std::size_t>(s.num_ranks), 0.0);
  const double m = s.num_microbatches;
  for (int st = 0; st < p.plan.partition.num_stages(); ++st) {
    const int first = p.plan.partition.first_layer(st);
    const int end = p.plan.partition.end_layer(st);
    // Which layers run their forward again: all under stage, the
    // checkpointed chunks' under full.
    std::vector<bool> recomputed(static_cast<std::size_t>(end - first), s.recompute == schedules::RecomputePolicy::stage);
    if (p.plan.checkpointing) {
      std::vector<std::string> kinds;
      for (int l = first; l < end; ++l) kinds.push_back(split.layers[static_cast<std::size_t>(l)].kind);
      for (const models::CheckpointUnit& u : models::checkpoint_units(kinds, p.plan.checkpointing)) {
        for (int l = u.first; l < u.end; ++l) recomputed[static_cast<std::size_t>(l)] = u.checkpointed;
      }
    }
    double us = 0;
    for (int l = first; l < end; ++l) {
      const profiles::PassTimes c = profiles::analytic_collective_times(
          split, split.layers[static_cast<std::size_t>(l)], r.device, r.dtype, micro_batch_size, r.analytic,
          models::CollectiveGroup::tensor);
      const double forwards = recomputed[static_cast<std::size_t>(l - first)] ? 2 * m : m;
      us += forwards * c.fwd_us + m * (c.bwd_input_us + c.bwd_weight_us - c.split_weight_us);
    }
    per_rank[s.rank_of(schedules::Stage{st}).at()] += us;
  }
  return *std::max_element(per_rank.begin(), per_rank.end());
}

std::int64_t peak_memory(const Prediction& p) {
  std::int64_t peak = 0;
  for (const auto& rank : p.metrics.ranks) peak = std::max(peak, rank.peak_activation_bytes + rank.static_bytes);
  return peak;
}

// One tensor-parallel degree's split model and its profile, or why there is none.
struct Split {
  std::string error;
  models::Model model;
  profiles::Profile profile;
};

// The whole model a choice runs: selective adds core_attn to its blocks' recompute.
models::Model model_for(const ClusterPlanRequest& r, bool selective) {
  if (!selective) return r.model;
  models::RecomputeModules modules = r.model.recompute_modules;
  modules.core_attn = true;
  return models::with_recompute_modules(r.model, modules);
}

Split split_for(const ClusterPlanRequest& r, const models::Model& whole, int t, int c) {
  Split s;
  if (r.gpus % (t * c) != 0) {
    s.error = c == 1 ? fmt::format("--tensor-parallel {} does not divide the {} GPUs", t, r.gpus)
                     : fmt::format("T x C = {} x {} does not divide the {} GPUs", t, c, r.gpus);
    return s;
  }
  if (r.gpus_per_node % t != 0) {
    s.error = fmt::format("--tensor-parallel {} does not divide --gpus-per-node {}: a tensor-parallel group lies "
                          "inside one node",
                          t, r.gpus_per_node);
    return s;
  }
  if (r.gpus_per_node % (t * c) != 0 && (t * c) % r.gpus_per_node != 0) {
    s.error = fmt::format("T x C = {} x {} GPUs a stage neither divides nor fills whole nodes of {}", t, c,
                          r.gpus_per_node);
    return s;
  }
  try {
    s.model = models::split_tensor_parallel(whole, {.degree = t, .sequence_parallel = r.sequence_parallel && t > 1});
    s.model = models::split_context_parallel(s.model, {.degree = c, .form = r.context_form});
    // A context group wider than a node shares keys and values over the network.
    profiles::AnalyticOptions analytic = r.analytic;
    if (t * c > r.gpus_per_node) analytic.context_link = r.inter_node;
    s.profile = profiles::analytic_profile(s.model, r.device, r.dtype, r.micro_batch_sizes, analytic);
  } catch (const InputError& e) {
    s.error = e.what();
  }
  return s;
}

// What every configuration of a plan shares.
struct PlanContext {
  const ClusterPlanRequest& request;
  std::int64_t memory_limit = 0;
  double peak_flops = 0;  // the device's, in the dtype
  double step_flops = 0;  // the whole model's, for the global batch
  double tokens = 0;      // a step's, over the cluster
};

// The rows of one pipeline (`base`: T, K, D, b and M set) with one schedule
// and recompute policy, a row per ZeRO stage, appended to `rows`. The
// pipeline is predicted once as a single replica (what data parallelism adds
// is the difference), then with its D replicas at each ZeRO stage.
void plan_pipeline(const PlanContext& c, plan::Planner& planner, const models::Model& split,
                   const ClusterPlanRow& base, std::int64_t replica_batch, std::vector<ClusterPlanRow>& rows) {
  const ClusterPlanRequest& r = c.request;
  Scenario sc;
  sc.request.schedule = base.schedule;
  sc.request.stages = base.pipeline;
  sc.request.stages_per_rank = base.stages_per_rank;
  sc.request.microbatches = base.microbatches;
  sc.request.batch = replica_batch;
  sc.request.recompute = base.recompute.policy;
  sc.request.optimizer = r.optimizer;
  sc.request.reduce_after_backward = r.reduce_after_backward;
  sc.request.fp32_main_grads = r.fp32_main_grads;
  sc.request.overlap_param_gather = r.overlap_param_gather;
  sc.conditions.tensor_parallel = base.tensor;
  sc.conditions.cluster = ClusterConditions{.gpus = std::nullopt, .gpus_per_node = r.gpus_per_node,
                                            .inter_node = r.inter_node,
                                            .scatter_gather = r.scatter_gather};
  std::optional<Prediction> alone;
  std::string alone_error;
  try {
    alone = predict(planner, sc, /*record_timeline=*/false);
  } catch (const InputError& e) {
    alone_error = e.what();
  }
  for (const int z : r.zero) {
    ClusterPlanRow row = base;
    row.zero = z;
    row.status = "skipped";
    if (!alone) {
      row.reason = alone_error;
    } else if (z > 0 && base.data == 1) {
      row.reason = fmt::format("ZeRO {} shards over replicas, and there is one", z);
    } else {
      try {
        std::optional<Prediction> replicated;
        if (base.data > 1) {
          Scenario with_replicas = sc;
          with_replicas.request.data_parallel = base.data;
          with_replicas.request.zero = z;
          with_replicas.conditions.cluster->gpus = r.gpus;
          replicated = predict(planner, with_replicas, /*record_timeline=*/false);
        }
        const Prediction& p = replicated ? *replicated : *alone;  // one replica: the same prediction
        const double step_us = p.metrics.step_time_us;
        const double step_s = step_us / 1e6;
        row.stages_per_rank = p.plan.schedule.num_stages / p.plan.schedule.num_ranks;
        row.step_us = step_us;
        row.tokens_per_s = c.tokens / step_s;
        row.tflops_per_gpu = c.step_flops / step_s / r.gpus / 1e12;
        row.mfu = c.step_flops / step_s / r.gpus / c.peak_flops;
        row.peak_memory_bytes = peak_memory(p);
        row.bubble_share = alone->metrics.bubble_fraction * alone->metrics.step_time_us / step_us;
        row.tensor_parallel_share = tensor_parallel_us(r, split, p, base.micro_batch_size) / step_us;
        row.data_parallel_share = (step_us - alone->metrics.step_time_us) / step_us;
        row.status = row.peak_memory_bytes > c.memory_limit ? "over memory" : "ok";
      } catch (const InputError& e) {
        row.reason = e.what();
      }
    }
    rows.push_back(std::move(row));
  }
}

}  // namespace

std::string to_string(const RecomputeChoice& choice) {
  return choice.selective ? "selective" : std::string(schedules::to_string(choice.policy));
}

std::optional<RecomputeChoice> parse_recompute_choice(std::string_view name) {
  if (name == "selective") return RecomputeChoice::selective_recompute();
  if (const auto policy = schedules::parse_recompute_policy(name)) return RecomputeChoice(*policy);
  return std::nullopt;
}

std::vector<std::string> recompute_choice_names() {
  std::vector<std::string> names = schedules::recompute_policy_names();
  names.emplace_back("selective");
  return names;
}

std::vector<ClusterPlanRow> plan_cluster(const ClusterPlanRequest& r, const ClusterPlanProgress& progress) {
  check(r);
  const std::vector<int> degrees = r.tensor_parallel.empty() ? divisors(r.gpus_per_node) : r.tensor_parallel;
  const PlanContext c{.request = r,
                      .memory_limit = profiles::usable_device_memory(r.device.memory_bytes),
                      .peak_flops = profiles::peak_flops(r.device, r.dtype),
                      .step_flops = flops_per_sample(models::with_recompute_modules(r.model, {})) *
                                    static_cast<double>(r.global_batch),
                      .tokens = static_cast<double>(r.global_batch) * std::max(r.model.seq, 1)};
  // Progress counts the configurations each T stands for, skipped or not.
  std::size_t per_pipeline = 0;  // of one b: every schedule at each of its V, recompute policy and ZeRO stage
  for (const std::string& schedule : r.schedules) {
    per_pipeline += stages_per_rank_for(r, schedule).size() * r.recompute.size() * r.zero.size();
  }
  const std::size_t per_depth = r.micro_batch_sizes.size() * per_pipeline;
  const auto per_degree = [&](int t, int c) -> std::size_t {
    if (r.gpus % (t * c) != 0) return 1;
    std::size_t n = 0;
    for (const Depth& depth : depths_for(r, t, c)) n += depth.error.empty() ? per_depth : 1;
    return n;
  };
  std::size_t total = 0;
  for (const int t : degrees) {
    for (const int c : r.context_parallel) total += per_degree(t, c);
  }
  std::size_t done = 0;
  const auto tick = [&](std::size_t n) {
    done += n;
    if (progress) progress(done, total);
  };

  // The models the choices run: as given, and with selective recompute.
  bool selective = false, plain = false;
  for (const RecomputeChoice& choice : r.recompute) (choice.selective ? selective : plain) = true;
  const models::Model given = model_for(r, false);
  const models::Model with_selective = selective ? model_for(r, true) : models::Model{};

  // A stage's groups: each T with each C (T x C GPUs a stage).
  std::vector<std::pair<int, int>> groups;
  for (const int t : degrees) {
    for (const int cp : r.context_parallel) groups.emplace_back(t, cp);
  }
  std::vector<ClusterPlanRow> rows;
  for (const auto& [t, cp] : groups) {
    const int w = t * cp;  // a stage's GPUs
    // The error of a T and C is the model's as given (or selective's alone).
    const Split split = split_for(r, plain ? given : with_selective, t, cp);
    Split split_selective;
    if (selective && plain && split.error.empty()) split_selective = split_for(r, with_selective, t, cp);
    if (!split.error.empty()) {
      // Every K and D of this T and C at once: 0 stands for any.
      rows.push_back({.tensor = t, .pipeline = 0, .data = 0, .context = cp, .status = "skipped", .reason = split.error});
      tick(per_degree(t, cp));
      continue;
    }
    plan::Planner planner(split.profile);
    std::optional<plan::Planner> selective_planner;
    if (selective && plain) {
      if (!split_selective.error.empty()) throw InputError(split_selective.error);
      selective_planner.emplace(split_selective.profile);
    }
    const std::vector<Depth> depths = depths_for(r, t, cp);
    if (depths.empty()) {
      rows.push_back({.tensor = t, .pipeline = 0, .data = 0, .context = cp, .status = "skipped",
                      .reason = cp == 1 ? fmt::format("no pipeline depth of the lists makes T x K x D = {} with T = {}",
                                                      r.gpus, t)
                                        : fmt::format("no pipeline depth of the lists makes T x C x K x D = {} with "
                                                      "T = {}, C = {}",
                                                      r.gpus, t, cp)});
      continue;
    }
    for (const Depth& depth : depths) {
      const int k = depth.k;
      if (!depth.error.empty()) {
        rows.push_back({.tensor = t, .pipeline = k, .data = 0, .context = cp, .status = "skipped", .reason = depth.error});
        tick(1);
        continue;
      }
      const int d = r.gpus / (w * k);
      ClusterPlanRow base{.tensor = t, .pipeline = k, .data = d, .context = cp, .status = "skipped"};
      if (r.global_batch % d != 0) {
        base.reason = fmt::format("the global batch of {} does not split over {} replicas", r.global_batch, d);
        rows.push_back(base);
        tick(per_depth);
        continue;
      }
      const std::int64_t replica_batch = r.global_batch / d;
      for (const int b : r.micro_batch_sizes) {
        ClusterPlanRow with_b = base;
        with_b.micro_batch_size = b;
        if (replica_batch % b != 0) {
          with_b.reason = fmt::format("a replica's batch of {} is not a multiple of {}", replica_batch, b);
          rows.push_back(with_b);
          tick(per_pipeline);
          continue;
        }
        with_b.microbatches = static_cast<int>(replica_batch / b);
        for (const std::string& schedule : r.schedules) {
          for (const int v : stages_per_rank_for(r, schedule)) {
            for (const RecomputeChoice& recompute : r.recompute) {
              ClusterPlanRow pipeline = with_b;
              pipeline.schedule = schedule;
              pipeline.stages_per_rank = v;
              pipeline.recompute = recompute;
              const bool other = recompute.selective && plain;
              plan_pipeline(c, other ? *selective_planner : planner, other ? split_selective.model : split.model,
                            pipeline, replica_batch, rows);
              tick(r.zero.size());
            }
          }
        }
      }
    }
  }
  return rows;
}

std::string cluster_plan_csv(const std::vector<ClusterPlanRow>& rows) {
  std::string out =
      "tensor_parallel,pipeline,data_parallel,stages_per_rank,microbatches,micro_batch_size,schedule,recompute,zero,"
      "status,reason,step_us,tokens_per_s,tflops_per_gpu,mfu,peak_memory_bytes,bubble_share,tensor_parallel_share,"
      "data_parallel_share,context_parallel\n";
  for (const ClusterPlanRow& r : rows) {
    std::string reason = r.reason;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},\"{}\",{:.3f},{:.1f},{:.2f},{:.4f},{},{:.4f},{:.4f},{:.4f},{}\n",
                       r.tensor, r.pipeline, r.data, r.stages_per_rank, r.microbatches, r.micro_batch_size, r.schedule,
                       r.schedule.empty() ? "" : to_string(r.recompute), r.zero, r.status, reason,
                       r.step_us, r.tokens_per_s, r.tflops_per_gpu, r.mfu, r.peak_memory_bytes, r.bubble_share,
                       r.tensor_parallel_share, r.data_parallel_share, r.context);
  }
  return out;
}

}  // namespace gpipe::sim
