#include "sim/cluster_planner.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "models/tensor_parallel.hpp"
#include "plan/plan.hpp"
#include "profiles/stage_costs.hpp"
#include "schedules/error.hpp"
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
  const double recomputed = s.recompute == schedules::RecomputePolicy::always ? m : 0;
  for (int st = 0; st < p.plan.partition.num_stages(); ++st) {
    double us = 0;
    for (int l = p.plan.partition.first_layer(st); l < p.plan.partition.end_layer(st); ++l) {
      const profiles::PassTimes c = profiles::analytic_collective_times(
          split.layers[static_cast<std::size_t>(l)], split.tensor_parallel, r.device, r.dtype, micro_batch_size,
          r.analytic);
      us += (m + recomputed) * c.fwd_us + m * (c.bwd_input_us + c.bwd_weight_us - c.split_weight_us);
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

Split split_for(const ClusterPlanRequest& r, int t) {
  Split s;
  if (r.gpus % t != 0) {
    s.error = fmt::format("--tensor-parallel {} does not divide the {} GPUs", t, r.gpus);
    return s;
  }
  if (r.gpus_per_node % t != 0) {
    s.error = fmt::format("--tensor-parallel {} does not divide --gpus-per-node {}: a tensor-parallel group lies "
                          "inside one node",
                          t, r.gpus_per_node);
    return s;
  }
  try {
    s.model = models::split_tensor_parallel(r.model, {.degree = t, .sequence_parallel = r.sequence_parallel && t > 1});
    s.profile = profiles::analytic_profile(s.model, r.device, r.dtype, r.micro_batch_sizes, r.analytic);
  } catch (const InputError& e) {
    s.error = e.what();
  }
  return s;
}

}  // namespace

std::vector<ClusterPlanRow> plan_cluster(const ClusterPlanRequest& r, const ClusterPlanProgress& progress) {
  check(r);
  const std::vector<int> degrees = r.tensor_parallel.empty() ? divisors(r.gpus_per_node) : r.tensor_parallel;
  const std::int64_t limit = profiles::usable_device_memory(r.device.memory_bytes);
  const double peak_flops = profiles::peak_flops(r.device, r.dtype);
  const double step_flops = flops_per_sample(r.model) * static_cast<double>(r.global_batch);
  const double tokens = static_cast<double>(r.global_batch) * std::max(r.model.seq, 1);
  const std::size_t inner = r.micro_batch_sizes.size() * r.schedules.size() * r.recompute.size() * r.zero.size();
  std::size_t total = 0;
  for (const int t : degrees) total += r.gpus % t == 0 ? divisors(r.gpus / t).size() * inner : 1;
  std::size_t done = 0;
  const auto tick = [&](std::size_t n) {
    done += n;
    if (progress) progress(done, total);
  };

  std::vector<ClusterPlanRow> rows;
  for (const int t : degrees) {
    const Split split = split_for(r, t);
    if (!split.error.empty()) {
      // Every K and D of this T at once: 0 stands for any.
      rows.push_back({.tensor = t, .pipeline = 0, .data = 0, .status = "skipped", .reason = split.error});
      tick(r.gpus % t == 0 ? divisors(r.gpus / t).size() * inner : 1);
      continue;
    }
    plan::Planner planner(split.profile);
    for (const int k : divisors(r.gpus / t)) {
      const int d = r.gpus / (t * k);
      ClusterPlanRow base{.tensor = t, .pipeline = k, .data = d};
      if (r.global_batch % d != 0) {
        base.status = "skipped";
        base.reason = fmt::format("the global batch of {} does not split over {} replicas", r.global_batch, d);
        rows.push_back(base);
        tick(inner);
        continue;
      }
      const std::int64_t replica_batch = r.global_batch / d;
      for (const int b : r.micro_batch_sizes) {
        ClusterPlanRow with_b = base;
        with_b.micro_batch_size = b;
        if (replica_batch % b != 0) {
          with_b.status = "skipped";
          with_b.reason = fmt::format("a replica's batch of {} is not a multiple of {}", replica_batch, b);
          rows.push_back(with_b);
          tick(inner / r.micro_batch_sizes.size());
          continue;
        }
        with_b.microbatches = static_cast<int>(replica_batch / b);
        for (const std::string& schedule : r.schedules) {
          for (const schedules::RecomputePolicy recompute : r.recompute) {
            Scenario sc;
            sc.request.schedule = schedule;
            sc.request.stages = k;
            sc.request.microbatches = with_b.microbatches;
            sc.request.batch = replica_batch;
            sc.request.recompute = recompute;
            sc.request.optimizer = r.optimizer;
            sc.conditions.tensor_parallel = t;
            sc.conditions.cluster = ClusterConditions{.gpus = std::nullopt,
                                                      .gpus_per_node = r.gpus_per_node,
                                                      .inter_node = r.inter_node};
            // The same pipeline as one replica: what data parallelism adds is the difference.
            std::optional<double> alone_us;
            double alone_bubble = 0;
            std::string alone_error;
            try {
              const Prediction alone = predict(planner, sc, /*record_timeline=*/false);
              alone_us = alone.metrics.step_time_us;
              alone_bubble = alone.metrics.bubble_fraction;
            } catch (const InputError& e) {
              alone_error = e.what();
            }
            for (const int z : r.zero) {
              ClusterPlanRow row = with_b;
              row.schedule = schedule;
              row.recompute = recompute;
              row.zero = z;
              row.status = "skipped";
              if (!alone_error.empty()) {
                row.reason = alone_error;
              } else if (z > 0 && d == 1) {
                row.reason = fmt::format("ZeRO {} shards over replicas, and there is one", z);
              } else {
                Scenario replicated = sc;
                replicated.request.data_parallel = d;
                replicated.request.zero = z;
                replicated.conditions.cluster->gpus = r.gpus;
                try {
                  const Prediction p = predict(planner, replicated, /*record_timeline=*/false);
                  const double step_s = p.metrics.step_time_us / 1e6;
                  row.stages_per_rank = p.plan.schedule.num_stages / p.plan.schedule.num_ranks;
                  row.step_us = p.metrics.step_time_us;
                  row.tokens_per_s = tokens / step_s;
                  row.tflops_per_gpu = step_flops / step_s / r.gpus / 1e12;
                  row.mfu = step_flops / step_s / r.gpus / peak_flops;
                  row.peak_memory_bytes = peak_memory(p);
                  row.bubble_share = alone_bubble * *alone_us / p.metrics.step_time_us;
                  row.tensor_parallel_share = tensor_parallel_us(r, split.model, p, b) / p.metrics.step_time_us;
                  row.data_parallel_share = (p.metrics.step_time_us - *alone_us) / p.metrics.step_time_us;
                  row.status = row.peak_memory_bytes > limit ? "over memory" : "ok";
                } catch (const InputError& e) {
                  row.reason = e.what();
                }
              }
              rows.push_back(std::move(row));
              tick(1);
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
      "data_parallel_share\n";
  for (const ClusterPlanRow& r : rows) {
    std::string reason = r.reason;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},\"{}\",{:.3f},{:.1f},{:.2f},{:.4f},{},{:.4f},{:.4f},{:.4f}\n",
                       r.tensor, r.pipeline, r.data, r.stages_per_rank, r.microbatches, r.micro_batch_size, r.schedule,
                       r.schedule.empty() ? "" : schedules::to_string(r.recompute), r.zero, r.status, reason,
                       r.step_us, r.tokens_per_s, r.tflops_per_gpu, r.mfu, r.peak_memory_bytes, r.bubble_share,
                       r.tensor_parallel_share, r.data_parallel_share);
  }
  return out;
}

}  // namespace gpipe::sim
