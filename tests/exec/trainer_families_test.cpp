// The CPU executor trains every schedule family the generators know (gpipe,
// 1f1b, the interleaved and V-shaped families, the zero-bubble ones with their
// I/W split), as the generators make them:
// - transparency: every step's loss and the final weights equal those of the
//   same training on one stage with one micro-batch, within 1e-5 relative
//   (AdamW's weights 1e-3: transparency_support.hpp);
// - memory: each rank's measured peak activation bytes EQUAL the simulator's
//   prediction for the same schedule, from the analytic fp32 profile of the
//   model (which says what W keeps), and every rank ends the step at 0 bytes.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/cpu/layers/layer.hpp"
#include "models/layer_layout.hpp"
#include "plan/microbatches.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "schedules/generate.hpp"
#include "sim/engine.hpp"
#include "sim/profile_costs.hpp"
#include "tests/exec/trainer_support.hpp"
#include "tests/exec/transparency_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::RecomputePolicy;
using trainer_test::RunConfig;

// The family's own schedule of K ranks and M micro-batches, the model cut
// uniformly into its K x V stages.
TrainOptions family_options_for(const RunConfig& config, const std::string& family, int ranks, int microbatches,
                                RecomputePolicy recompute) {
  schedules::ScheduleOptions s;
  s.num_ranks = ranks;
  s.num_microbatches = microbatches;
  s.recompute = recompute;
  schedules::Schedule schedule = schedules::generate(family, s);
  RunConfig c = config;
  c.stages = schedule.num_stages;
  c.microbatches = microbatches;
  TrainOptions o = trainer_test::options_for(c);
  o.schedule = std::move(schedule);
  return o;
}

std::vector<std::int64_t> predicted_peaks(const TrainOptions& o) {
  const std::vector<int> split = plan::split_batch(o.batch, o.schedule.num_microbatches);
  const std::set<int> sizes(split.begin(), split.end());
  const profiles::Profile profile = profiles::analytic_profile(
      o.model, profiles::device_named("h100"), models::DType::fp32, std::vector<int>(sizes.begin(), sizes.end()));
  const sim::ProfileCosts costs(profile, o.partition.layers_per_stage, split);
  schedules::Schedule schedule = o.schedule;
  schedule.tied_embedding = o.model.tied;
  const sim::SimResult result = sim::simulate(schedule, costs, sim::UniformLink(0, 1e6));
  std::vector<std::int64_t> peaks;
  for (const auto& rank : result.metrics.ranks) peaks.push_back(rank.peak_activation_bytes);
  return peaks;
}

void expect_every_family_trains(const RunConfig& base, int ranks, int microbatches) {
  const TrainResult ref = trainer_test::one_stage_reference(base);
  for (const std::string& family : schedules::schedule_names()) {
    for (RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::stage}) {
      const std::string what = fmt::format("{} {} K={} M={} recompute={}", base.model, family, ranks,
                                           microbatches, schedules::to_string(recompute));
      const TrainOptions o = family_options_for(base, family, ranks, microbatches, recompute);
      const TrainResult run = cpu::train(o);
      trainer_test::expect_matches(run, ref, o.model, base.optimizer, what);
      std::vector<std::int64_t> measured;
      for (const auto& rank : run.metrics.ranks) measured.push_back(rank.peak_activation_bytes);
      EXPECT_EQ(measured, predicted_peaks(o)) << what;
      for (int r = 0; r < ranks; ++r) {
        std::int64_t last = -1;
        for (const auto& sample : run.timeline.memory) {
          if (sample.rank.value == r) last = sample.activation_bytes;
        }
        EXPECT_EQ(last, 0) << what << " rank " << r;
      }
    }
  }
}

// K = 2, M = 4: a configuration every family takes (dualpipev needs M >= 2K,
// the interleaved ones M in whole rounds of K); V = 2 where it applies, so 4
// stages of a 5- or 6-layer model.
TEST(TrainerFamilies, MlpEveryFamilyIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 8;
  c.steps = 2;
  expect_every_family_trains(c, 2, 4);
}

TEST(TrainerFamilies, TransformerEveryFamilyIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";
  c.batch = 8;
  c.steps = 2;
  expect_every_family_trains(c, 2, 4);
}

// Llama blocks (GQA, RoPE, SwiGLU, RMSNorm) with flash attention, and with naive.
TEST(TrainerFamilies, LlamaEveryFamilyIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = "llama:layers=4,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32";
  c.batch = 8;
  c.steps = 2;
  expect_every_family_trains(c, 2, 4);
  c.model += ",attn=naive";
  expect_every_family_trains(c, 2, 4);
}

// A tied embedding (tied=1): the first and the last stage exchange the
// token table's gradient before they step (REDUCE_GRAD, WAIT_REDUCE_GRAD),
// so every family trains as the one stage that sums its two layers'
// gradients itself, and the two copies of the matrix stay equal, bit for bit.
TEST(TrainerFamilies, LlamaTiedEveryFamilyIsTransparentAndItsCopiesStayEqual) {
  RunConfig c;
  c.model = "llama:layers=4,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32,tied=1";
  c.batch = 8;
  c.steps = 2;
  expect_every_family_trains(c, 2, 4);
  expect_every_family_trains(c, 3, 6);
  for (const char* family : {"1f1b", "zbv", "interleaved-1f1b"}) {
    const TrainOptions o = family_options_for(c, family, 2, 4, RecomputePolicy::never);
    const TrainResult run = cpu::train(o);
    const auto& table = run.weights.front()[models::layout::token_embedding::kTok];
    const auto& unembedding = run.weights.back()[models::layout::rms_head::kWu];
    EXPECT_EQ(table, unembedding) << family;
    // ... and they moved: each took the sum of both gradients.
    const auto first_layer = cpu::make_layer(o.model, 0, o.seed);
    const auto initial = first_layer->parameters()[models::layout::token_embedding::kTok].value.f32();
    EXPECT_NE(table, std::vector<float>(initial.begin(), initial.end())) << family;
  }
}

// DiT blocks, the conditioning row travelling with the tokens.
TEST(TrainerFamilies, DitEveryFamilyIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = "dit:layers=4,hidden=16,heads=2,tokens=6,patch=1,channels=2,classes=5";
  c.batch = 8;
  c.steps = 2;
  expect_every_family_trains(c, 2, 4);
}

// With momentum SGD, whose step does not amplify a gradient's last bits as
// AdamW's does below its epsilon (transparency_support.hpp), the weights too
// stay within 1e-5 of the one stage's, for the llama and DiT families.
TEST(TrainerFamilies, LlamaAndDitWeightsWithMomentumStayWithinTheTolerance) {
  RunConfig c;
  c.optimizer.kind = models::Optimizer::momentum;
  c.batch = 8;
  c.steps = 2;
  for (const char* model : {"llama:layers=4,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32",
                            "dit:layers=4,hidden=16,heads=2,tokens=6,patch=1,channels=2,classes=5"}) {
    c.model = model;
    expect_every_family_trains(c, 2, 4);
  }
}

TEST(TrainerFamilies, TransformerWithFlashAttentionEveryFamily) {
  RunConfig c;
  c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32,attn=flash";
  c.batch = 8;
  c.steps = 2;
  expect_every_family_trains(c, 2, 4);
}

// K = 3, M = 6: three ranks, and M not a power of two.
TEST(TrainerFamilies, ThreeRanksEveryFamily) {
  RunConfig c;
  c.model = "mlp:layers=6,hidden=8";
  c.batch = 12;
  c.steps = 2;
  expect_every_family_trains(c, 3, 6);
}

}  // namespace
}  // namespace gpipe::exec
