// One configuration end to end: the plan (batch split, partition, schedule,
// static memory) and the simulated metrics, with bad configurations rejected.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "base/error.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/collectives.hpp"
#include "profiles/device.hpp"
#include "sim/scenario.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::sim {
namespace {

using testing::uniform_profile;

using gpipe::testing::error_of;

TEST(Predict, UniformProfileGivesTheClosedForm) {
  // 8 layers, 4 stages of 2: per micro-batch of 2 samples F = 2 * 2 * 10 us.
  const auto profile = uniform_profile(8, 10.0, 20.0);
  for (const char* schedule : {"gpipe", "1f1b"}) {
    Scenario sc;
    sc.request.schedule = schedule;
    sc.request.stages = 4;
    sc.request.microbatches = 8;
    sc.request.batch = 16;
    const Prediction p = predict(profile, sc);
    EXPECT_EQ(p.plan.partition.layers_per_stage, (std::vector<int>{2, 2, 2, 2}));
    EXPECT_EQ(p.plan.microbatch_sizes, std::vector<int>(8, 2));
    const std::int64_t tf = 40'000, tb = 80'000;
    EXPECT_EQ(p.metrics.step_time_ns, (8 + 4 - 1) * (tf + tb));
    EXPECT_DOUBLE_EQ(p.metrics.bubble_fraction, 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(p.metrics.throughput_samples_per_s, 16 * 1e9 / ((8 + 4 - 1) * (tf + tb)));
  }
}

TEST(Predict, UnevenMicrobatchesCostByTheirSize) {
  // N = 5 over M = 2: sizes 3 and 2. One stage: F0 3*10, F1 2*10, B1 2*20, B0 3*20 us.
  const auto profile = uniform_profile(1, 10.0, 20.0);
  Scenario sc;
  sc.request.stages = 1;
  sc.request.microbatches = 2;
  sc.request.batch = 5;
  const Prediction p = predict(profile, sc);
  EXPECT_EQ(p.plan.microbatch_sizes, (std::vector<int>{3, 2}));
  EXPECT_EQ(p.metrics.step_time_ns, 150'000);
}

TEST(Predict, StaticMemoryFromOptimizerAndDtype) {
  // fp32, 400 param bytes per layer = 100 parameters; adamw 16 B, sgd 8 B each.
  const auto profile = uniform_profile(6, 1.0, 1.0);
  Scenario sc;
  sc.request.stages = 2;
  sc.request.microbatches = 2;
  sc.request.micro_batch_size = 1;
  sc.request.partition = models::parse_partition_spec("4,2");
  EXPECT_EQ(predict(profile, sc).plan.static_bytes, (std::vector<std::int64_t>{6400, 3200}));
  sc.request.optimizer = models::Optimizer::sgd;
  EXPECT_EQ(predict(profile, sc).plan.static_bytes, (std::vector<std::int64_t>{3200, 1600}));
  EXPECT_EQ(models::static_bytes_per_param(models::Optimizer::adamw, "bf16"), 16);
  EXPECT_EQ(models::static_bytes_per_param(models::Optimizer::momentum, "bf16"), 12);
  EXPECT_EQ(models::static_bytes_per_param(models::Optimizer::momentum, "fp32"), 12);
}

TEST(Predict, ActivationPeakFromTheProfile) {
  // GPipe keeps all M micro-batches: M * (layers per stage) * bytes * b.
  const auto profile = uniform_profile(4, 1.0, 2.0, /*activation=*/1000, /*input=*/100);
  Scenario sc;
  sc.request.stages = 2;
  sc.request.microbatches = 4;
  sc.request.micro_batch_size = 3;
  const Prediction p = predict(profile, sc);
  EXPECT_EQ(p.metrics.ranks[0].peak_activation_bytes, 4 * 2 * 1000 * 3);
  sc.request.recompute = schedules::RecomputePolicy::stage;
  const Prediction r = predict(profile, sc);
  EXPECT_EQ(r.metrics.ranks[0].peak_activation_bytes, 3 * 100 * 3 + 2 * 1000 * 3);
}

// Megatron's full recompute, by hand: 2 stages of 2 blocks, each block
// 1000 bytes a sample (100 of them its input), b = 3. A stage keeps each
// block's input, 600 bytes a micro-batch, and rebuilding its second block
// holds 300 + 3000 = 3300 at worst: a transient of 2700. GPipe's rank 0
// peaks at the first B, its 4 micro-batches' 2400 and the 2700. Each B runs
// the stage's forward again: 12 + 6 us.
TEST(Predict, FullRecomputeKeepsEachBlocksInputAndRebuildsInB) {
  auto profile = uniform_profile(4, 1.0, 2.0, /*activation=*/1000, /*input=*/100);
  for (auto& layer : profile.layers) layer.kind = "mlp_block";
  Scenario sc;
  sc.request.stages = 2;
  sc.request.microbatches = 4;
  sc.request.micro_batch_size = 3;
  sc.request.recompute = schedules::RecomputePolicy::full;
  const Prediction p = predict(profile, sc);
  ASSERT_TRUE(p.plan.checkpointing.has_value());
  EXPECT_EQ(p.metrics.ranks[0].peak_activation_bytes, 4 * 600 + 2700);
  EXPECT_EQ(p.metrics.step_time_ns, (4 + 2 - 1) * (6'000 + 18'000));
  // Two blocks a checkpoint: 300 kept, the stage whole (6000) rebuilt at once.
  sc.request.checkpointing = {models::CheckpointMethod::uniform, 2};
  EXPECT_EQ(predict(profile, sc).metrics.ranks[0].peak_activation_bytes, 4 * 300 + 5700);
  // The first block alone checkpointed: 300 + 3000 kept, the worst at the end.
  sc.request.checkpointing = {models::CheckpointMethod::block, 1};
  EXPECT_EQ(predict(profile, sc).metrics.ranks[0].peak_activation_bytes, 4 * 3300);
  // Never recomputing keeps 6000 a micro-batch.
  sc.request.recompute = schedules::RecomputePolicy::never;
  EXPECT_EQ(predict(profile, sc).metrics.ranks[0].peak_activation_bytes, 4 * 6000);
}

TEST(Predict, FullRecomputeRefusesASplitBackward) {
  auto profile = uniform_profile(4, 1.0, 2.0, 1000, 100);
  for (auto& layer : profile.layers) {
    layer.kind = "mlp_block";
    layer.samples[0].bwd_input_us = 1.0;
    layer.samples[0].bwd_weight_us = 1.0;
  }
  Scenario sc;
  sc.request.schedule = "zb-h1";
  sc.request.stages = 2;
  sc.request.microbatches = 4;
  sc.request.micro_batch_size = 1;
  sc.request.recompute = schedules::RecomputePolicy::full;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }),
            "--recompute full: schedule zb-h1 splits its backward (I and W) or overlaps F with B, which full "
            "recompute does not run yet; use a schedule with whole backwards (gpipe, 1f1b, interleaved-1f1b, ...)");
  sc.request.schedule = "1f1b";
  sc.request.checkpointing.num_layers = 0;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "--recompute-num-layers 0: give 1 or more");
}

// A context-parallel profile's spans are its own form's collectives: the
// all-gather form reduce-scatters the keys' and values' gradients in B, the
// ring passes them on around the group as it passed them forward.
TEST(Predict, DrawsTheContextGroupsCollectivesInTheProfilesForm) {
  const models::Model whole = models::parse_model("llama:layers=2,hidden=64,heads=4,kv_heads=2,ffn=96,seq=64,vocab=64");
  for (const auto form : {models::ContextParallelForm::all_gather, models::ContextParallelForm::ring}) {
    const models::Model model = models::split_context_parallel(whole, {.degree = 2, .form = form});
    const std::vector<int> sizes{1};
    const profiles::Profile profile =
        profiles::analytic_profile(model, profiles::device_named("h100"), models::DType::bf16, sizes);
    ASSERT_EQ(profile.context_form, form);
    Scenario sc;
    sc.request.schedule = "1f1b";
    sc.request.stages = 1;
    sc.request.microbatches = 1;
    sc.request.batch = 1;
    const Prediction p = predict(profile, sc, /*record_timeline=*/true);
    std::vector<std::string> in_b;
    for (const auto& span : p.timeline.collectives) {
      if (span.group == timelines::CollectiveGroup::context && span.within.kind == schedules::ActionKind::B &&
          span.collective != "all-gather") {
        in_b.push_back(span.collective);
      }
    }
    // Two blocks' B: the all-gather form's reduce-scatter in each, the ring's none.
    EXPECT_EQ(in_b.size(), form == models::ContextParallelForm::all_gather ? 2U : 0U) << models::to_string(form);
  }
}

// A tensor-parallel profile's all-reduces as its blocks ran them
// (link.tensor_all_reduce) price the prediction's spans in place of the link.
TEST(Predict, TensorParallelSpansTakeTheProfilesOwnAllReduceFit) {
  const models::Model model = models::split_tensor_parallel(
      models::parse_model("transformer:layers=2,hidden=64,heads=4,seq=16,vocab=64"), {.degree = 2});
  const std::vector<int> sizes{1};
  profiles::Profile profile =
      profiles::analytic_profile(model, profiles::device_named("h100"), models::DType::bf16, sizes);
  Scenario sc;
  sc.request.schedule = "1f1b";
  sc.request.stages = 1;
  sc.request.microbatches = 1;
  sc.request.batch = 1;
  const auto first_span = [&] {
    const Prediction p = predict(profile, sc, /*record_timeline=*/true);
    for (const auto& span : p.timeline.collectives) {
      if (span.group == timelines::CollectiveGroup::tensor) return span;
    }
    throw std::logic_error("no tensor-parallel span");
  };
  const auto on_link = first_span();
  profile.link.tensor_all_reduce = profiles::CollectiveLink{.latency_us = 0.5, .bandwidth_GBps = 2.0};
  const auto fitted = first_span();
  EXPECT_EQ(fitted.end_ns - fitted.start_ns,
            profiles::fastest_collective(models::Collective::all_reduce, 2, fitted.bytes, *profile.link.tensor_all_reduce).ns);
  EXPECT_NE(fitted.end_ns - fitted.start_ns, on_link.end_ns - on_link.start_ns);
}

TEST(Predict, RejectsConfigurationsThatCannotExist) {
  const auto profile = uniform_profile(4, 1.0, 1.0);
  Scenario sc;
  sc.request.stages = 5;
  sc.request.microbatches = 2;
  sc.request.batch = 8;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }),
            "--stages 5 exceeds the 4 layers of the profile: every stage needs at least one layer");
  sc.request.stages = 2;
  sc.request.partition = models::parse_partition_spec("1,2");
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "--partition 1,2 sums to 3 layers, the model has 4");
  sc.request.partition = {};
  sc.request.batch = 0;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "give --batch N or --micro-batch-size b");
  sc.request.batch = 8;
  sc.conditions.link_bandwidth_GBps = 0.0;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "--link-bandwidth-gbps must be from 1e-06 to 1e+09 GB/s, got 0");
}

TEST(Predict, RefusesNumbersPastWhatIntegerNanosecondsHold) {
  // Every layer at the 1e12 us a profile may say; 2 stages of 2 layers.
  const auto profile = testing::uniform_profile(4, 1e12, 1e12);
  Scenario sc;
  sc.request.stages = 2;
  sc.request.microbatches = 1;
  sc.request.batch = 1;
  EXPECT_NO_THROW((void)predict(profile, sc));  // one micro-batch: about 10^16 ns in all
  // 2 stages x 1000 micro-batches x (2 F + B + I + W = 8e15 ns): 1.6e19 ns.
  sc.request.microbatches = 1000;
  sc.request.batch = 1000;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }),
            "this step's compute and transfers add up to 1.6e+10 s, past the 4.6e+09 s (146 years) the "
            "simulator's integer ns hold");
  sc.request.microbatches = 1;
  sc.request.batch = 1;
  sc.conditions.link_latency_us = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "--link-latency-us must be from 0 to 1e+12 us, got nan");
  sc.conditions.link_latency_us = 0.0;
  sc.conditions.link_bandwidth_GBps = 1e-300;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }),
            "--link-bandwidth-gbps must be from 1e-06 to 1e+09 GB/s, got 1e-300");
  sc.conditions.link_bandwidth_GBps = std::nullopt;
  sc.conditions.jitter.cv = 1e308;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "--jitter must be a coefficient of variation from 0 to 10, got 1e+308");
}

}  // namespace
}  // namespace gpipe::sim
