// The CPU profiler: the bytes it MEASURES equal the model description's
// (models::bytes_at) exactly, every layer kind included; times are positive;
// the profile is a valid profile (docs/profiles.md) that round-trips and that the
// simulator runs. Tiny models and few repeats: no test asserts a speed.
#include "exec/cpu/profiler.hpp"

#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/cpu/device_name.hpp"
#include "models/model_spec.hpp"
#include "sim/scenario.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec {
namespace {

using testing::error_of;

ProfilerOptions quick() {
  ProfilerOptions options;
  options.warmup = 1;
  options.repeats = 3;
  options.link_round_trips = 20;
  return options;
}

// Every sample's bytes against bytes_at, and the times against zero.
void expect_measured_as_described(const models::Model& model, const profiles::Profile& profile,
                                  const std::vector<int>& sizes) {
  ASSERT_EQ(profile.layers.size(), model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const models::Layer& layer = model.layers[i];
    const profiles::LayerProfile& lp = profile.layers[i];
    SCOPED_TRACE(layer.name);
    EXPECT_EQ(lp.name, layer.name);
    EXPECT_EQ(lp.kind, layer.kind);
    EXPECT_EQ(lp.param_bytes, models::param_bytes(layer, models::DType::fp32));
    if (layer.params > 0) {
      EXPECT_GT(lp.optimizer_us, 0.0);
    } else {
      EXPECT_EQ(lp.optimizer_us, 0.0);  // nothing to step
    }
    ASSERT_EQ(lp.samples.size(), sizes.size());
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      const profiles::ProfileSample& sample = lp.samples[s];
      SCOPED_TRACE(sizes[s]);
      EXPECT_EQ(sample.micro_batch_size, sizes[s]);
      const models::LayerBytes want = models::bytes_at(layer, sizes[s], models::DType::fp32);
      EXPECT_EQ(sample.input_bytes, want.input_bytes);
      EXPECT_EQ(sample.output_bytes, want.output_bytes);
      EXPECT_EQ(sample.activation_bytes, want.activation_bytes);
      EXPECT_EQ(sample.weight_grad_stash_bytes,
                models::weight_grad_stash_bytes_at(layer, sizes[s], models::DType::fp32));
      EXPECT_GT(sample.fwd_us, 0.0);
      EXPECT_GT(sample.bwd_us, 0.0);
      // I and W are timed apart; the full backward is the two in one call.
      ASSERT_TRUE(sample.bwd_input_us.has_value());
      ASSERT_TRUE(sample.bwd_weight_us.has_value());
      EXPECT_GE(*sample.bwd_input_us, 0.0);
      EXPECT_GE(*sample.bwd_weight_us, 0.0);
      EXPECT_EQ(sample.bwd_us, *sample.bwd_input_us + *sample.bwd_weight_us);
    }
  }
}

TEST(Profiler, MlpBytesAreTheModelsExactly) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const std::vector<int> sizes = {1, 3};
  const profiles::Profile profile = cpu::profile_cpu(model, std::vector<int>{3, 1}, quick());
  expect_measured_as_described(model, profile, sizes);  // sorted, whatever the order given
}

TEST(Profiler, TransformerBytesAreTheModelsExactly) {
  // Every kind with a token input or target: embedding, block, lm_head.
  const models::Model model = models::parse_model("transformer:layers=1,hidden=8,heads=2,seq=4,vocab=16");
  const std::vector<int> sizes = {2};
  expect_measured_as_described(model, cpu::profile_cpu(model, sizes, quick()), sizes);
}

TEST(Profiler, DescribesItselfAsACpuProfileOfTheModel) {
  const models::Model model = models::parse_model("mlp:hidden=8,layers=1");
  const profiles::Profile profile = cpu::profile_cpu(model, std::vector<int>{2}, quick());
  EXPECT_EQ(profile.source, "cpu");
  EXPECT_EQ(profile.dtype, "fp32");
  EXPECT_EQ(profile.model, "mlp:layers=1,hidden=8");  // canonical
  EXPECT_EQ(profile.device, cpu::device_name());
  EXPECT_GT(profile.link.latency_us, 0.0);
  EXPECT_EQ(profile.link.bandwidth_GBps, cpu::kInProcessBandwidthGBps);
}

TEST(Profiler, ProfileRoundTripsAndTheSimulatorRunsIt) {
  const models::Model model = models::parse_model("mlp:layers=3,hidden=8");
  const profiles::Profile profile = cpu::profile_cpu(model, std::vector<int>{1, 2}, quick());
  EXPECT_EQ(profiles::profile_from_json(profiles::to_json(profile), "memory"), profile);
  const auto path = std::filesystem::path(::testing::TempDir()) / "gpipe_profiler_test.json";
  profiles::write_profile(profile, path);
  EXPECT_EQ(profiles::load_profile(path), profile);
  std::filesystem::remove(path);

  sim::Scenario sc;
  sc.request.stages = 2;
  sc.request.microbatches = 2;
  sc.request.batch = 4;
  const sim::Prediction p = sim::predict(profile, sc);
  EXPECT_GT(p.metrics.step_time_us, 0.0);
  // The simulator's stash of stage 0 at b=2 is the profile's, which is the model's.
  std::int64_t stage0 = 0;
  for (int l = 0; l < p.plan.partition.end_layer(0); ++l) {
    stage0 += models::bytes_at(model.layers[static_cast<std::size_t>(l)], 2, models::DType::fp32)
                  .activation_bytes;
  }
  EXPECT_EQ(p.metrics.ranks[0].peak_activation_bytes, 2 * stage0);  // GPipe: M stashes at once
}

TEST(Profiler, OptimizerUsTimesTheChosenOptimizer) {
  // SGD keeps no state, AdamW two buffers: both step, both take time.
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  ProfilerOptions options = quick();
  options.optimizer.kind = models::Optimizer::sgd;
  const profiles::Profile profile = cpu::profile_cpu(model, std::vector<int>{1}, options);
  EXPECT_GT(profile.layers[0].optimizer_us, 0.0);
  EXPECT_EQ(profile.layers[1].optimizer_us, 0.0);
}

TEST(Profiler, ReportsEachPassAndLayer) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  ProfilerOptions options = quick();
  std::vector<int> passes_seen;
  options.on_pass = [&](int pass, int passes) {
    EXPECT_EQ(passes, 4);  // 1 warm-up + 3 timed
    passes_seen.push_back(pass);
  };
  std::vector<std::string> seen;
  options.on_layer = [&](int index, int count, const profiles::LayerProfile& layer) {
    EXPECT_EQ(count, 3);
    EXPECT_EQ(index, static_cast<int>(seen.size()));
    seen.push_back(layer.name);
  };
  (void)cpu::profile_cpu(model, std::vector<int>{4, 1}, options);
  EXPECT_EQ(passes_seen, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(seen, (std::vector<std::string>{"block0", "block1", "loss"}));
}

TEST(Profiler, RejectsBadSizesAndCounts) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  EXPECT_EQ(error_of([&] { (void)cpu::profile_cpu(model, std::vector<int>{}, quick()); }),
            "--micro-batch-sizes: no size given");
  EXPECT_EQ(error_of([&] { (void)cpu::profile_cpu(model, std::vector<int>{2, 1, 2}, quick()); }),
            "--micro-batch-sizes: 2 is given more than once");
  EXPECT_EQ(error_of([&] { (void)cpu::profile_cpu(model, std::vector<int>{0}, quick()); }),
            "--micro-batch-sizes: sizes must be at least 1, got 0");
  ProfilerOptions options = quick();
  options.repeats = 0;
  EXPECT_EQ(error_of([&] { (void)cpu::profile_cpu(model, std::vector<int>{1}, options); }),
            "--repeats must be at least 1, got 0");
  options = quick();
  options.warmup = -1;
  EXPECT_EQ(error_of([&] { (void)cpu::profile_cpu(model, std::vector<int>{1}, options); }),
            "--warmup must be 0 or more, got -1");
  EXPECT_EQ(error_of([] { (void)cpu::measure_handoff_latency_us(0); }), "link round trips must be at least 1");
}

TEST(Profiler, MeasuresContentionWithAsManyPeersAsAsked) {
  // One point per peer, ascending, each a slowdown: finite, 0 or more (noise
  // that made the loaded passes faster reads as none). With more threads per
  // rank, or 0 peers asked, none is measured.
  const models::Model model = models::parse_model("mlp:layers=2,hidden=16");
  ProfilerOptions options = quick();
  options.contention_peers = 1;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const profiles::Profile one = cpu::profile_cpu(model, std::vector<int>{1, 2}, options);
  if (cores >= 2) {
    ASSERT_EQ(one.contention.size(), 1U);
    EXPECT_EQ(one.contention[0].busy_peers, 1);
    EXPECT_GE(one.contention[0].slowdown, 0.0);
    EXPECT_LE(one.contention[0].slowdown, profiles::kMaxSlowdown);
  } else {
    EXPECT_TRUE(one.contention.empty());
  }
  options.contention_peers = 0;
  EXPECT_TRUE(cpu::profile_cpu(model, std::vector<int>{1}, options).contention.empty());
  options.contention_peers = 1;
  options.threads_per_rank = 2;
  EXPECT_TRUE(cpu::profile_cpu(model, std::vector<int>{1}, options).contention.empty());
}

// dit's cache=1 keeps each stream's last keys and values: an inference
// profile measures what a block makes for one stream, the model's 2TH a
// sample; a training profile of it is refused (no backward).
TEST(Profiler, MeasuresTheStateOfACachedDitForInference) {
  const models::Model model = models::parse_model("dit:layers=2,hidden=16,heads=2,tokens=4,classes=3,cache=1");
  ProfilerOptions options = quick();
  options.forward_only = true;
  const profiles::Profile profile = cpu::profile_cpu(model, std::vector<int>{1, 2}, options);
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    for (const profiles::ProfileSample& sample : profile.layers[l].samples) {
      const std::int64_t expected = models::bytes_at(model.layers[l], sample.micro_batch_size, models::DType::fp32).state_bytes;
      EXPECT_EQ(sample.state_bytes.value_or(0), expected) << l << " b=" << sample.micro_batch_size;
    }
  }
  EXPECT_EQ(profile.layers[1].samples[1].state_bytes, 2 * 2 * 4 * 16 * 4);
  EXPECT_EQ(error_of([&] { (void)cpu::profile_cpu(model, std::vector<int>{1}, quick()); }),
            "dit's cache=1 serves inference streams, which have no backward: profile it with --workload inference");
}

TEST(Profiler, HandoffLatencyIsPositive) {
  EXPECT_GT(cpu::measure_handoff_latency_us(20), 0.0);
}

}  // namespace
}  // namespace gpipe::exec
