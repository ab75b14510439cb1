// Dropout on the CPU (exec/cpu/ops/dropout.hpp, the spec's dropout=p): its
// counter-based masks (their share of kept elements within the binomial's
// spread, the same for the same key and none outside training), and a
// training run: it drops (its losses differ from the run without), the
// other schedules (split backwards too) train it as 1F1B does, recompute of
// every kind bit for bit, and each rank's measured peak, masks included, equals the
// simulator's prediction byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/cpu/ops/dropout.hpp"
#include "tests/exec/predicted_peak.hpp"
#include "tests/exec/trainer_support.hpp"
#include "tests/exec/transparency_support.hpp"

namespace gpipe::exec {
namespace {

using cpu::DropoutDraw;
using cpu::DropoutSite;
using schedules::RecomputePolicy;
using trainer_test::RunConfig;

constexpr const char* kDropGpt = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32,dropout=0.25";

std::vector<std::uint8_t> mask_of(const DropoutDraw& draw, DropoutSite site, std::int64_t samples,
                                  std::int64_t per_sample, std::int64_t first = 0) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(samples * per_sample));
  cpu::draw_mask(draw, site, samples, per_sample, first, mask.data());
  return mask;
}

TEST(Dropout, MasksKeepOneMinusPAndDependOnTheirKeyAlone) {
  const DropoutDraw draw{.layer_key = 42, .step = 3, .first_sample = 8, .probability = 0.1, .training = true};
  const std::int64_t n = 200000;
  const std::vector<std::uint8_t> mask = mask_of(draw, DropoutSite::attention_out, 1, n);
  double kept = 0;
  for (const std::uint8_t m : mask) kept += m;
  // Binomial(n, 0.9): a standard deviation of sqrt(n 0.09) = 134 elements;
  // 5 of them is 0.34 % of n.
  EXPECT_NEAR(kept / n, 0.9, 5 * std::sqrt(0.09 / n));
  EXPECT_FLOAT_EQ(draw.scale(), static_cast<float>(1 / 0.9));
  // The same key, the same mask; element by element too.
  EXPECT_EQ(mask_of(draw, DropoutSite::attention_out, 1, n), mask);
  for (std::int64_t j = 0; j < 1000; ++j) EXPECT_EQ(draw.keeps(DropoutSite::attention_out, 0, j), mask[j] != 0);
  // A sample's mask is its row's: the second sample of a micro-batch from
  // row 8 is the first of one from row 9, and a part's slice is the whole's.
  DropoutDraw next = draw;
  next.first_sample = 9;
  const std::vector<std::uint8_t> two = mask_of(draw, DropoutSite::mlp_out, 2, 64);
  const std::vector<std::uint8_t> second = mask_of(next, DropoutSite::mlp_out, 1, 64);
  EXPECT_TRUE(std::equal(second.begin(), second.end(), two.begin() + 64));
  const std::vector<std::uint8_t> slice = mask_of(draw, DropoutSite::mlp_out, 1, 32, 32);
  EXPECT_TRUE(std::equal(slice.begin(), slice.end(), two.begin() + 32));
  // Another step, site or layer draws another mask.
  DropoutDraw later = draw;
  later.step = 4;
  DropoutDraw other_layer = draw;
  other_layer.layer_key = 43;
  EXPECT_NE(mask_of(later, DropoutSite::attention_out, 1, 1000), mask_of(draw, DropoutSite::attention_out, 1, 1000));
  EXPECT_NE(mask_of(draw, DropoutSite::probabilities, 1, 1000), mask_of(draw, DropoutSite::attention_out, 1, 1000));
  EXPECT_NE(mask_of(other_layer, DropoutSite::attention_out, 1, 1000),
            mask_of(draw, DropoutSite::attention_out, 1, 1000));
  // Outside training, or at p = 0, nothing drops and nothing is scaled.
  DropoutDraw serving = draw;
  serving.training = false;
  EXPECT_EQ(mask_of(serving, DropoutSite::embedding, 1, 100), std::vector<std::uint8_t>(100, 1));
  EXPECT_EQ(serving.scale(), 1.0F);
}

RunConfig dropout_config(const std::string& model, const std::string& schedule, RecomputePolicy recompute) {
  RunConfig c;
  c.model = model;
  c.schedule = schedule;
  c.stages = 3;
  c.microbatches = 4;
  c.batch = 6;
  c.recompute = recompute;
  c.steps = 2;
  c.optimizer = trainer_test::adamw(1e-3F);
  return c;
}

TEST(Dropout, ItDropsAndEverySchedulesSplitTrainsItAsGpipe) {
  const std::string flash = std::string(kDropGpt) + ",attn=flash";
  for (const std::string model : {std::string(kDropGpt), flash}) {
    const models::Model parsed = models::parse_model(model);
    const TrainResult ref = cpu::train(trainer_test::options_for(dropout_config(model, "1f1b", RecomputePolicy::never)));
    // Without dropout the same run's losses differ: the masks act.
    const std::string without = model.substr(0, model.find(",dropout=")) +
                                (model.ends_with("flash") ? ",attn=flash" : "");
    const TrainResult plain = cpu::train(trainer_test::options_for(dropout_config(without, "1f1b", RecomputePolicy::never)));
    EXPECT_NE(ref.losses, plain.losses) << model;
    // Other orders of the same micro-batches: within transparency's tolerance
    // (the gradients summed in another order).
    for (const std::string schedule : {"gpipe", "zb-h1", "zb-h2"}) {
      const RunConfig c = dropout_config(model, schedule, RecomputePolicy::never);
      trainer_test::expect_matches(cpu::train(trainer_test::options_for(c)), ref, parsed, c.optimizer,
                                   model + " " + schedule);
    }
    // The same order with the core attention and the MLP recomputed, and
    // with GPipe's and Megatron's recompute: bit for bit, the masks drawn again.
    const TrainResult again = cpu::train(
        trainer_test::options_for(dropout_config(model + ",recompute=core_attn+mlp", "1f1b", RecomputePolicy::never)));
    EXPECT_EQ(again.losses, ref.losses) << model;
    EXPECT_EQ(again.weights, ref.weights) << model;
    for (const RecomputePolicy policy : {RecomputePolicy::stage, RecomputePolicy::full}) {
      const TrainResult rebuilt = cpu::train(trainer_test::options_for(dropout_config(model, "1f1b", policy)));
      EXPECT_EQ(rebuilt.losses, ref.losses) << model << " " << schedules::to_string(policy);
      EXPECT_EQ(rebuilt.weights, ref.weights) << model << " " << schedules::to_string(policy);
    }
  }
}

TEST(Dropout, PeakPerRankWithTheMasksEqualsTheSimulatorsPrediction) {
  const std::string flash = std::string(kDropGpt) + ",attn=flash";
  for (const std::string model : {std::string(kDropGpt), flash, std::string(kDropGpt) + ",recompute=core_attn"}) {
    for (const std::string schedule : {"1f1b", "zb-h1"}) {
      for (const RecomputePolicy policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::full}) {
        // A split backward recomputes nothing (module recompute refuses it).
        if (schedule == "zb-h1" && (policy != RecomputePolicy::never || model.ends_with("core_attn"))) continue;
        const RunConfig c = dropout_config(model, schedule, policy);
        const TrainOptions options = trainer_test::options_for(c);
        const TrainResult run = cpu::train(options);
        for (std::size_t r = 0; r < run.metrics.ranks.size(); ++r) {
          EXPECT_EQ(run.metrics.ranks[r].peak_activation_bytes, trainer_test::predicted_peak(c, options, r))
              << fmt::format("{} {} {} rank {}", model, schedule, schedules::to_string(policy), r);
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpipe::exec
