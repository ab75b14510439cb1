// torchgpipe's test_transparency for the CPU executor: pipelining must not
// change the math. For gpipe and 1f1b, every recompute policy, several (K, M)
// (M < K and uneven micro-batches included), both model families and two
// optimizers, the loss of every step and the final weights equal those of
// the same training run on one stage with one micro-batch.
//
// Tolerance: 1e-5 relative, per step for the loss (|l - l_ref| / |l_ref|) and
// per parameter tensor for the weights (||w - w_ref||_2 / ||w_ref||_2). Only
// the summation order of the accumulated gradients differs between the runs
// (fp32), so the errors are rounding-sized.
//
// One exception, with AdamW only: the key bias of attention (the middle third
// of a transformer block's bqkv) has a gradient that is zero in exact
// arithmetic (adding a constant to every key shifts each query's scores by
// one constant, which softmax ignores), so what reaches it is rounding noise,
// and Adam divides it by its own magnitude into steps of about the learning
// rate with a random sign. Those values differ between any two summation
// orders; they are left out of the weight comparison (the loss still
// compares every step, and SGD with momentum compares every weight).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "models/layer_layout.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::RecomputePolicy;
using trainer_test::RunConfig;

constexpr double kTolerance = 1e-5;

struct Shape {
  int stages;
  int microbatches;
  std::int64_t batch;
};

// The values of parameter `p` of layer `l` that transparency is checked on.
std::vector<float> compared(const models::Model& model, const OptimizerConfig& optimizer,
                            std::size_t l, std::size_t p, std::vector<float> values) {
  constexpr std::size_t kBqkv = models::layout::transformer_block::kBqkv;
  if (optimizer.kind != models::Optimizer::adamw || model.layers[l].kind != "transformer_block" ||
      p != kBqkv) {
    return values;
  }
  const auto h = static_cast<std::size_t>(model.hidden);
  EXPECT_EQ(values.size(), 3 * h) << "bqkv is not parameter 3 of " << model.layers[l].name;
  if (values.size() != 3 * h) return values;
  values.erase(values.begin() + static_cast<std::ptrdiff_t>(h),
               values.begin() + static_cast<std::ptrdiff_t>(2 * h));  // the key bias
  return values;
}

// `run` against the reference: every step's loss and every compared weight.
void expect_matches(const TrainResult& run, const TrainResult& ref, const models::Model& model,
                    const OptimizerConfig& optimizer, const std::string& what) {
  ASSERT_EQ(run.losses.size(), ref.losses.size()) << what;
  for (std::size_t step = 0; step < ref.losses.size(); ++step) {
    EXPECT_LE(std::abs(run.losses[step] - ref.losses[step]) / std::abs(ref.losses[step]),
              kTolerance)
        << what << " step " << step << ": " << run.losses[step] << " vs " << ref.losses[step];
  }
  ASSERT_EQ(run.weights.size(), ref.weights.size()) << what;
  double worst = 0;
  for (std::size_t l = 0; l < ref.weights.size(); ++l) {
    ASSERT_EQ(run.weights[l].size(), ref.weights[l].size()) << what << " layer " << l;
    for (std::size_t p = 0; p < ref.weights[l].size(); ++p) {
      const double error =
          trainer_test::relative_error(compared(model, optimizer, l, p, run.weights[l][p]),
                                       compared(model, optimizer, l, p, ref.weights[l][p]));
      worst = std::max(worst, error);
      EXPECT_LE(error, kTolerance) << what << " layer " << l << " parameter " << p;
    }
  }
  ::testing::Test::RecordProperty(what, fmt::format("{:.3g}", worst));
}

void expect_transparent(const RunConfig& base, const std::vector<Shape>& shapes) {
  const models::Model model = models::parse_model(base.model);
  RunConfig ref_config = base;
  ref_config.schedule = "gpipe";
  ref_config.stages = 1;
  ref_config.microbatches = 1;
  ref_config.recompute = RecomputePolicy::never;
  const TrainResult ref = cpu::train(trainer_test::options_for(ref_config));
  ASSERT_EQ(ref.losses.size(), static_cast<std::size_t>(base.steps));

  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (RecomputePolicy recompute :
         {RecomputePolicy::never, RecomputePolicy::always, RecomputePolicy::except_last}) {
      for (const Shape& shape : shapes) {
        RunConfig c = base;
        c.schedule = schedule;
        c.recompute = recompute;
        c.stages = shape.stages;
        c.microbatches = shape.microbatches;
        c.batch = shape.batch;
        ASSERT_EQ(c.batch, ref_config.batch) << "the reference trains on the same mini-batches";
        const std::string what =
            fmt::format("{} {} K={} M={} N={} recompute={}", c.model, schedule, c.stages,
                        c.microbatches, c.batch, schedules::to_string(recompute));
        expect_matches(cpu::train(trainer_test::options_for(c)), ref, model, c.optimizer, what);
      }
    }
  }
}

// mlp:layers=4 has 5 layers (4 blocks and the loss), so K <= 5.
const std::vector<Shape> kMlpShapes = {{2, 3, 7}, {4, 2, 7}, {5, 4, 7}};
// transformer:layers=4 has 6 layers (embedding, 4 blocks, head).
const std::vector<Shape> kTransformerShapes = {{2, 3, 5}, {4, 2, 5}, {3, 5, 5}};

TEST(TrainerTransparency, MlpMomentum) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 7;
  c.optimizer = trainer_test::momentum(0.05F);
  expect_transparent(c, kMlpShapes);
}

TEST(TrainerTransparency, MlpAdamw) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 7;
  c.optimizer = trainer_test::adamw(1e-3F);
  expect_transparent(c, kMlpShapes);
}

TEST(TrainerTransparency, TransformerMomentum) {
  RunConfig c;
  c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";
  c.batch = 5;
  c.optimizer = trainer_test::momentum(0.05F);
  expect_transparent(c, kTransformerShapes);
}

TEST(TrainerTransparency, TransformerAdamw) {
  RunConfig c;
  c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";
  c.batch = 5;
  c.optimizer = trainer_test::adamw(1e-3F);
  expect_transparent(c, kTransformerShapes);
}

// Two stages on each of two ranks: activations and gradients between stages
// of one rank are handed over locally, not through the link.
TEST(TrainerTransparency, TwoStagesPerRank) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 7;
  c.optimizer = trainer_test::momentum(0.05F);
  RunConfig ref_config = c;
  const TrainResult ref = cpu::train(trainer_test::options_for(ref_config));

  for (RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::always}) {
    c.stages = 4;
    c.microbatches = 3;
    TrainOptions o = trainer_test::options_for(c);
    schedules::Schedule& s = o.schedule;
    s.name = "gpipe-two-stages-per-rank";
    s.num_ranks = 2;
    s.stage_to_rank = {schedules::Rank{0}, schedules::Rank{0}, schedules::Rank{1},
                       schedules::Rank{1}};
    s.recompute = recompute;
    s.ranks.assign(2, {});
    for (int r = 0; r < 2; ++r) {
      auto& list = s.ranks[static_cast<std::size_t>(r)];
      for (int m = 0; m < 3; ++m) {
        for (int st : {2 * r, 2 * r + 1})
          list.push_back(schedules::make_action(st, schedules::ActionKind::F, m));
      }
      for (int m = 2; m >= 0; --m) {
        for (int st : {2 * r + 1, 2 * r})
          list.push_back(schedules::make_action(st, schedules::ActionKind::B, m));
      }
    }
    const TrainResult run = cpu::train(o);
    expect_matches(
        run, ref, o.model, c.optimizer,
        fmt::format("two stages per rank, recompute={}", schedules::to_string(recompute)));
    EXPECT_EQ(run.metrics.ranks.size(), 2U);
  }
}

}  // namespace
}  // namespace gpipe::exec
