// The CPU executor really trains: a small transformer, pipelined over two
// stages, learns the synthetic task's recurrence over 50 steps: from ln(32) ~ 3.47
// (chance over a 32-token vocabulary) to about 0.9 on this machine, so half the
// first loss is a clear margin.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

TEST(TrainerConvergence, TransformerLossFallsOverFiftySteps) {
  trainer_test::RunConfig c;
  c.model = "transformer:layers=2,hidden=16,heads=2,seq=8,vocab=32";
  c.schedule = "1f1b";
  c.stages = 2;
  c.microbatches = 4;
  c.batch = 16;
  c.steps = 50;
  c.optimizer = trainer_test::adamw(1e-2F);
  const TrainResult run = cpu::train(trainer_test::options_for(c));
  ASSERT_EQ(run.losses.size(), 50U);
  const double first = run.losses.front();
  const double last5 = std::accumulate(run.losses.end() - 5, run.losses.end(), 0.0) / 5;
  EXPECT_LT(last5, 0.5 * first) << "first " << first << ", mean of the last 5 " << last5;
}

}  // namespace
}  // namespace gpipe::exec
