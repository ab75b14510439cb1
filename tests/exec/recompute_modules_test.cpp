// The executor's module recompute (models/recompute_modules.hpp, the spec's
// recompute=): each block runs its named modules' forwards again in its
// backward from what it kept, the forward's own ops on the same inputs, so a
// run trains to the same losses and weights as without it, bit for bit; and
// each rank's measured peak equals the simulator's prediction byte for byte,
// with the modules' tensors out of the stash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/exec/predicted_peak.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::RecomputePolicy;
using trainer_test::RunConfig;

constexpr const char* kGpt = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";
constexpr const char* kGptFlash = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32,attn=flash";
constexpr const char* kLlama = "llama:layers=4,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32";
constexpr const char* kLlamaNaive = "llama:layers=4,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32,attn=naive";
const std::vector<std::string> kModules = {"core_attn", "mlp", "layernorm", "core_attn+mlp+layernorm"};

RunConfig config(const std::string& model, const std::string& schedule, RecomputePolicy recompute) {
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

TEST(RecomputeModules, TrainToTheSameLossesAndWeightsBitForBit) {
  for (const std::string base : {kGpt, kGptFlash, kLlama, kLlamaNaive}) {
    for (const std::string schedule : {"gpipe", "1f1b"}) {
      const TrainResult ref = cpu::train(trainer_test::options_for(config(base, schedule, RecomputePolicy::never)));
      for (const std::string& modules : kModules) {
        const std::string model = base + ",recompute=" + modules;
        const TrainResult run = cpu::train(trainer_test::options_for(config(model, schedule, RecomputePolicy::never)));
        const std::string what = fmt::format("{} {}", model, schedule);
        EXPECT_EQ(run.losses, ref.losses) << what;
        ASSERT_EQ(run.weights.size(), ref.weights.size()) << what;
        for (std::size_t i = 0; i < ref.weights.size(); ++i) EXPECT_EQ(run.weights[i], ref.weights[i]) << what;
      }
    }
  }
}

TEST(RecomputeModules, PeakPerRankEqualsTheSimulatorsPredictionAndFalls) {
  for (const std::string base : {kGpt, kLlama}) {
    const TrainResult never = cpu::train(trainer_test::options_for(config(base, "1f1b", RecomputePolicy::never)));
    // With Megatron's full recompute too: the non-checkpointed head keeps less,
    // and the rebuilt chunk is the modules' smaller stash.
    for (const RecomputePolicy policy : {RecomputePolicy::never, RecomputePolicy::full}) {
      for (const std::string& modules : kModules) {
        const RunConfig c = config(base + ",recompute=" + modules, "1f1b", policy);
        const TrainOptions options = trainer_test::options_for(c);
        const TrainResult run = cpu::train(options);
        for (std::size_t r = 0; r < run.metrics.ranks.size(); ++r) {
          const std::string what = fmt::format("{} {} rank {}", c.model, schedules::to_string(policy), r);
          EXPECT_EQ(run.metrics.ranks[r].peak_activation_bytes, trainer_test::predicted_peak(c, options, r)) << what;
          // Rank 1 holds blocks only, whose stash the modules shrink.
          if (r == 1) EXPECT_LT(run.metrics.ranks[r].peak_activation_bytes, never.metrics.ranks[r].peak_activation_bytes) << what;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpipe::exec
