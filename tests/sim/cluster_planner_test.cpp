// The planner (sim/cluster_planner.hpp) on a small llama and a cluster of 8
// GPUs, 4 a node: it enumerates every T x K x D = 8, keeps what cannot exist
// with its reason, and each simulated row is the prediction `gpipe-sim run`
// makes of the same configuration, with its shares worked out from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "models/optimizer.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "sim/cluster_planner.hpp"
#include "sim/scenario.hpp"
#include "tests/error_of.hpp"

namespace gpipe::sim {
namespace {

using schedules::RecomputePolicy;

ClusterPlanRequest small_request() {
  ClusterPlanRequest r;
  r.model = models::parse_model("llama:layers=8,hidden=512,heads=8,kv_heads=2,ffn=1408,seq=512,vocab=1024");
  r.device = profiles::device_named("h100");
  r.gpus = 8;
  r.gpus_per_node = 4;
  r.global_batch = 32;
  r.micro_batch_sizes = {1, 4};
  r.schedules = {"1f1b"};
  r.recompute = {RecomputePolicy::never};
  r.zero = {0, 1};
  return r;
}

const ClusterPlanRow& find_row(const std::vector<ClusterPlanRow>& rows, int t, int k, int b, int zero) {
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const ClusterPlanRow& r) {
    return r.tensor == t && r.pipeline == k && r.micro_batch_size == b && r.zero == zero;
  });
  if (it == rows.end()) throw std::runtime_error("no such row");
  return *it;
}

TEST(ClusterPlanner, EnumeratesEveryWayToSplitTheCluster) {
  const std::vector<ClusterPlanRow> rows = plan_cluster(small_request());
  std::set<std::tuple<int, int, int>> shapes;
  for (const ClusterPlanRow& r : rows) {
    if (r.pipeline > 0) {
      EXPECT_EQ(r.tensor * r.pipeline * r.data, 8) << r.tensor << " " << r.pipeline;
      shapes.insert({r.tensor, r.pipeline, r.data});
    }
  }
  // T 1 and 2 (of the divisors of 4 a node; 4 does not divide the 2
  // key/value heads: one row says so, for every K); K every divisor of 8 / T.
  EXPECT_EQ(shapes, (std::set<std::tuple<int, int, int>>{{1, 1, 8}, {1, 2, 4}, {1, 4, 2}, {1, 8, 1},
                                                          {2, 1, 4}, {2, 2, 2}, {2, 4, 1}}));
  EXPECT_EQ(rows.size(), 7U * 2 * 2 + 1);
  EXPECT_EQ(rows.back().tensor, 4);
  EXPECT_EQ(rows.back().pipeline, 0);
  EXPECT_EQ(rows.back().reason, "--tensor-parallel 4 does not divide the 2 key/value heads");
  const ClusterPlanRow& zero_one = find_row(rows, 1, 8, 4, 1);
  EXPECT_EQ(zero_one.status, "skipped");
  EXPECT_EQ(zero_one.reason, "ZeRO 1 shards over replicas, and there is one");
}

TEST(ClusterPlanner, WhatCannotExistSaysWhy) {
  ClusterPlanRequest r = small_request();
  r.tensor_parallel = {4, 8};
  r.global_batch = 12;  // 2 replicas at T = 4, K = 1: 6 each, not a multiple of 4
  const std::vector<ClusterPlanRow> rows = plan_cluster(r);
  // T = 4 does not divide the 2 key/value heads; T = 8 is more than a node.
  EXPECT_EQ(rows.front().status, "skipped");
  EXPECT_EQ(rows.front().reason, "--tensor-parallel 4 does not divide the 2 key/value heads");
  EXPECT_EQ(rows.back().reason,
            "--tensor-parallel 8 does not divide --gpus-per-node 4: a tensor-parallel group lies inside one node");
  EXPECT_EQ(rows.size(), 2U);
  ClusterPlanRequest uneven = small_request();
  uneven.global_batch = 12;
  const std::vector<ClusterPlanRow> split = plan_cluster(uneven);
  EXPECT_EQ(find_row(split, 1, 1, 0, 0).reason, "the global batch of 12 does not split over 8 replicas");
  EXPECT_EQ(find_row(split, 2, 1, 4, 0).reason, "a replica's batch of 3 is not a multiple of 4");
}

TEST(ClusterPlanner, ARowIsThePredictionOfItsConfiguration) {
  const ClusterPlanRequest r = small_request();
  const std::vector<ClusterPlanRow> rows = plan_cluster(r);
  const ClusterPlanRow& row = find_row(rows, 2, 2, 4, 1);
  ASSERT_EQ(row.status, "ok") << row.reason;
  EXPECT_EQ(row.data, 2);
  EXPECT_EQ(row.microbatches, 4);  // 32 / 2 replicas / 4

  const models::Model split = models::split_tensor_parallel(r.model, {.degree = 2, .sequence_parallel = true});
  const profiles::Profile profile = profiles::analytic_profile(split, r.device, r.dtype, r.micro_batch_sizes);
  Scenario sc;
  sc.request.schedule = "1f1b";
  sc.request.stages = 2;
  sc.request.microbatches = 4;
  sc.request.batch = 16;
  sc.request.data_parallel = 2;
  sc.request.zero = 1;
  sc.conditions.cluster = ClusterConditions{.gpus = 8, .gpus_per_node = 4};
  const Prediction p = predict(profile, sc, false);
  EXPECT_DOUBLE_EQ(row.step_us, p.metrics.step_time_us);
  EXPECT_DOUBLE_EQ(row.tokens_per_s, 32.0 * 512 / (p.metrics.step_time_us / 1e6));
  double flops = 0;
  for (const models::Layer& l : r.model.layers) flops += l.fwd_flops + l.bwd_input_flops + l.bwd_weight_flops;
  EXPECT_NEAR(row.mfu, flops * 32 / (p.metrics.step_time_us / 1e6) / 8 / profiles::peak_flops(r.device, r.dtype),
              1e-12);
  std::int64_t peak = 0;
  for (const auto& rank : p.metrics.ranks) peak = std::max(peak, rank.peak_activation_bytes + rank.static_bytes);
  EXPECT_EQ(row.peak_memory_bytes, peak);
  // One replica of the same pipeline: what data parallelism adds.
  sc.request.data_parallel = 1;
  sc.request.zero = 0;
  sc.conditions.cluster->gpus = std::nullopt;
  const Prediction alone = predict(profile, sc, false);
  EXPECT_DOUBLE_EQ(row.data_parallel_share, (p.metrics.step_time_us - alone.metrics.step_time_us) / p.metrics.step_time_us);
  EXPECT_GT(row.data_parallel_share, 0);
  EXPECT_GT(row.tensor_parallel_share, 0);
  EXPECT_DOUBLE_EQ(row.bubble_share,
                   alone.metrics.bubble_fraction * alone.metrics.step_time_us / p.metrics.step_time_us);
  // One GPU a stage and one replica spend nothing in either.
  const ClusterPlanRow& plain = find_row(rows, 1, 8, 4, 0);
  EXPECT_EQ(plain.tensor_parallel_share, 0);
  EXPECT_EQ(plain.data_parallel_share, 0);
}

TEST(ClusterPlanner, ListsOfOneValuePinOneConfiguration) {
  const std::vector<ClusterPlanRow> every = plan_cluster(small_request());
  ClusterPlanRequest r = small_request();
  r.tensor_parallel = {2};
  r.pipeline = {2};
  r.micro_batch_sizes = {4};
  r.zero = {1};
  const std::vector<ClusterPlanRow> one = plan_cluster(r);
  ASSERT_EQ(one.size(), 1U);
  const ClusterPlanRow& row = find_row(every, 2, 2, 4, 1);
  EXPECT_EQ(one[0].data, 2);
  EXPECT_EQ(one[0].status, "ok");
  EXPECT_DOUBLE_EQ(one[0].step_us, row.step_us);
  EXPECT_EQ(one[0].peak_memory_bytes, row.peak_memory_bytes);
}

TEST(ClusterPlanner, AReplicaListKeepsThoseReplicaCounts) {
  ClusterPlanRequest r = small_request();
  r.data_parallel = {2};
  const std::vector<ClusterPlanRow> rows = plan_cluster(r);
  std::set<std::tuple<int, int, int>> shapes;
  for (const ClusterPlanRow& row : rows) {
    if (row.pipeline > 0) shapes.insert({row.tensor, row.pipeline, row.data});
  }
  EXPECT_EQ(shapes, (std::set<std::tuple<int, int, int>>{{1, 4, 2}, {2, 2, 2}}));
  // A depth that does not divide the GPUs is a row that says so.
  r = small_request();
  r.tensor_parallel = {2};
  r.pipeline = {3, 2};
  const std::vector<ClusterPlanRow> odd = plan_cluster(r);
  ASSERT_EQ(odd.size(), 1U + 2 * 2);  // K = 3 alone; K = 2 at b 1 and 4, ZeRO 0 and 1
  EXPECT_EQ(odd[0].pipeline, 3);
  EXPECT_EQ(odd[0].reason, "--pipeline 3 does not divide N / T = 4 (8 GPUs, T = 2)");
  // Lists that leave no depth for a T: one row says so.
  r.pipeline = {2};
  r.data_parallel = {4};
  const std::vector<ClusterPlanRow> none = plan_cluster(r);
  ASSERT_EQ(none.size(), 1U);
  EXPECT_EQ(none[0].reason, "no pipeline depth of the lists makes T x K x D = 8 with T = 2");
}

TEST(ClusterPlanner, EachStagesPerRankOfTheListIsARow) {
  ClusterPlanRequest r = small_request();
  r.tensor_parallel = {1};
  r.pipeline = {2};
  r.micro_batch_sizes = {1};
  r.zero = {0};
  r.schedules = {"interleaved-1f1b", "1f1b"};
  r.stages_per_rank = {2, 4};
  const std::vector<ClusterPlanRow> rows = plan_cluster(r);
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[0].schedule, "interleaved-1f1b");
  EXPECT_EQ(rows[0].stages_per_rank, 2);
  EXPECT_EQ(rows[0].status, "ok") << rows[0].reason;
  EXPECT_EQ(rows[1].stages_per_rank, 4);
  EXPECT_EQ(rows[1].status, "ok") << rows[1].reason;
  // The model cut into 4 and into 8 stages: two different pipelines.
  EXPECT_NE(rows[1].step_us, rows[0].step_us);
  // 1F1B has one stage a rank whatever the list: one row, at its own V.
  EXPECT_EQ(rows[2].schedule, "1f1b");
  EXPECT_EQ(rows[2].status, "ok") << rows[2].reason;
  EXPECT_EQ(rows[2].stages_per_rank, 1);
}

TEST(ClusterPlanner, TheCsvHoldsEveryRow) {
  const std::vector<ClusterPlanRow> rows = plan_cluster(small_request());
  const std::string csv = cluster_plan_csv(rows);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(rows.size()) + 1);
  EXPECT_EQ(csv.substr(0, csv.find(',')), "tensor_parallel");
}

TEST(ClusterPlanner, BadRequestsAreOneLine) {
  using gpipe::testing::error_of;
  ClusterPlanRequest r = small_request();
  r.global_batch = 0;
  EXPECT_EQ(error_of([&] { (void)plan_cluster(r); }), "--global-batch 0: give 1 or more samples");
  r = small_request();
  r.zero = {4};
  EXPECT_EQ(error_of([&] { (void)plan_cluster(r); }), "--zero 4: ZeRO's stages are 0, 1, 2 and 3");
  r = small_request();
  r.schedules.clear();
  EXPECT_EQ(error_of([&] { (void)plan_cluster(r); }), "--schedules: give at least one value");
  r = small_request();
  r.pipeline = {0};
  EXPECT_EQ(error_of([&] { (void)plan_cluster(r); }), "--pipeline 0: give 1 or more stages");
  r = small_request();
  r.stages_per_rank = {0};
  EXPECT_EQ(error_of([&] { (void)plan_cluster(r); }), "--stages-per-rank 0: give 1 or more stages a rank");
}

// Selective recompute is a choice of the plan: each of its rows is the
// prediction of the model with recompute=core_attn under policy never, its
// MFU counts the model's FLOPs alone (as never's rows do), and a naive
// attention's scores leave the stash.
TEST(ClusterPlanner, SelectiveRecomputeIsTheModelWithItsAttentionCoreRecomputed) {
  ClusterPlanRequest r = small_request();
  r.model = models::parse_model("transformer:layers=8,hidden=512,heads=8,seq=512,vocab=1024");
  r.tensor_parallel = {2};
  r.pipeline = {2};
  r.micro_batch_sizes = {4};
  r.zero = {0};
  r.recompute = {RecomputePolicy::never, RecomputeChoice::selective_recompute()};
  const std::vector<ClusterPlanRow> rows = plan_cluster(r);
  ASSERT_EQ(rows.size(), 2U);
  const ClusterPlanRow& never = rows[0];
  const ClusterPlanRow& selective = rows[1];
  EXPECT_EQ(to_string(selective.recompute), "selective");
  ASSERT_TRUE(never.ok() && selective.ok());
  EXPECT_LT(selective.peak_memory_bytes, never.peak_memory_bytes);
  EXPECT_GT(selective.step_us, never.step_us);
  EXPECT_DOUBLE_EQ(selective.tflops_per_gpu * selective.step_us, never.tflops_per_gpu * never.step_us);

  // The same as the model given with recompute=core_attn and the policy never.
  ClusterPlanRequest as_model = r;
  as_model.model = models::parse_model("transformer:layers=8,hidden=512,heads=8,seq=512,vocab=1024,recompute=core_attn");
  as_model.recompute = {RecomputePolicy::never};
  const std::vector<ClusterPlanRow> given = plan_cluster(as_model);
  EXPECT_EQ(given.at(0).step_us, selective.step_us);
  EXPECT_EQ(given.at(0).peak_memory_bytes, selective.peak_memory_bytes);
  EXPECT_NE(cluster_plan_csv(rows).find(",selective,0,ok,"), std::string::npos);
  EXPECT_EQ(parse_recompute_choice("selective"), RecomputeChoice::selective_recompute());
  EXPECT_EQ(parse_recompute_choice("full"), RecomputeChoice(RecomputePolicy::full));
  EXPECT_EQ(parse_recompute_choice("partial"), std::nullopt);
}

}  // namespace
}  // namespace gpipe::sim

namespace gpipe::sim {
namespace {

// Context parallelism (models/context_parallel.hpp): C GPUs beside each
// stage's T, T x C x K x D = N, each row the prediction of the profile split
// over T then C, its gradients reduced over D x C.
TEST(ClusterPlanner, ContextParallelismSplitsEachSequenceBesideTheStage) {
  ClusterPlanRequest r = small_request();
  r.context_parallel = {1, 2};
  const std::vector<ClusterPlanRow> rows = plan_cluster(r);
  int with_context = 0;
  for (const ClusterPlanRow& row : rows) {
    if (row.pipeline > 0 && row.data > 0) EXPECT_EQ(row.tensor * row.context * row.pipeline * row.data, 8);
    with_context += row.context == 2 && row.ok() ? 1 : 0;
  }
  EXPECT_GT(with_context, 0);
  const auto it = std::find_if(rows.begin(), rows.end(), [](const ClusterPlanRow& row) {
    return row.tensor == 1 && row.context == 2 && row.pipeline == 2 && row.micro_batch_size == 4 && row.zero == 1;
  });
  ASSERT_NE(it, rows.end());
  ASSERT_TRUE(it->ok()) << it->reason;
  EXPECT_EQ(it->data, 2);
  EXPECT_EQ(it->microbatches, 4);  // 32 sequences / 2 replicas / 4: C splits tokens, not samples

  const models::Model split = models::split_context_parallel(r.model, {.degree = 2});
  const profiles::Profile profile = profiles::analytic_profile(split, r.device, r.dtype, r.micro_batch_sizes);
  Scenario sc;
  sc.request.schedule = "1f1b";
  sc.request.stages = 2;
  sc.request.microbatches = 4;
  sc.request.batch = 16;
  sc.request.data_parallel = 2;
  sc.request.zero = 1;
  sc.conditions.cluster = ClusterConditions{.gpus = 8, .gpus_per_node = 4};
  const Prediction p = predict(profile, sc, false);
  EXPECT_DOUBLE_EQ(it->step_us, p.metrics.step_time_us);
  // The gradients are reduced, and ZeRO shards, over D x C = 4.
  EXPECT_EQ(p.plan.schedule.data_parallel, 4);
  sc.request.zero = 0;
  const Prediction unsharded = predict(profile, sc, false);
  const std::int64_t gap = unsharded.plan.static_bytes[0] - p.plan.static_bytes[0];
  std::int64_t params = 0;
  for (int l = p.plan.partition.first_layer(0); l < p.plan.partition.end_layer(0); ++l) {
    params += profile.layers[static_cast<std::size_t>(l)].param_bytes / 2;
  }
  const auto sharded = [&](int zero, int over) {
    return models::static_bytes(models::Optimizer::adamw, profile.dtype, params, zero, over, false).total();
  };
  EXPECT_EQ(gap, sharded(0, 4) - sharded(1, 4));  // AdamW's fp32 state over 4, not 2
  EXPECT_NE(gap, sharded(0, 2) - sharded(1, 2));
  // Naive attention cannot be split so: the row says why.
  ClusterPlanRequest naive = r;
  naive.model = models::parse_model("llama:layers=8,hidden=512,heads=8,kv_heads=2,ffn=1408,seq=512,vocab=1024,attn=naive");
  bool refused = false;
  for (const ClusterPlanRow& row : plan_cluster(naive)) {
    refused = refused || (row.context == 2 && row.reason.find("naive attention") != std::string::npos);
  }
  EXPECT_TRUE(refused);
}

}  // namespace
}  // namespace gpipe::sim
