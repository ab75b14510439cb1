// A cost model's price table (sim/stage_prices.hpp): a profile's, read from
// its stage costs, holds what the profile answers action by action; a
// repricing's holds its own answers on the base's classes; a model that
// prices each action apart has none.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiles/profile.hpp"
#include "schedules/action.hpp"
#include "sim/action_overhead.hpp"
#include "sim/data_parallel.hpp"
#include "sim/jitter.hpp"
#include "sim/profile_costs.hpp"
#include "sim/stage_prices.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;

// Four layers, each with its own costs at micro-batch sizes 1 and 2.
profiles::Profile four_layer_profile() {
  profiles::Profile p;
  p.device = "test device";
  p.source = "analytic";
  p.dtype = "fp32";
  p.model = "test";
  for (int i = 0; i < 4; ++i) {
    profiles::LayerProfile layer;
    layer.name = "layer" + std::to_string(i);
    layer.kind = "test";
    layer.param_bytes = 500 + i;
    layer.optimizer_us = 1.5 + i;
    for (const int b : {1, 2}) {
      profiles::ProfileSample s;
      s.micro_batch_size = b;
      s.fwd_us = b * (3.0 + i) + 0.25;
      s.bwd_us = b * (6.0 + i) + 0.5;
      s.bwd_input_us = b * (3.5 + i);
      s.bwd_weight_us = b * (2.5 + i);
      s.input_bytes = b * (100 + i);
      s.output_bytes = b * (110 + i);
      s.activation_bytes = b * (700 + i);
      s.weight_grad_stash_bytes = b * (300 + i);
      layer.samples.push_back(s);
    }
    p.layers.push_back(layer);
  }
  return p;
}

TEST(StagePrices, AProfilesTableIsWhatItAnswersActionByAction) {
  const profiles::Profile profile = four_layer_profile();
  const ProfileCosts costs(profile, std::vector<int>{1, 3}, {2, 1, 2, 1, 1});
  const std::optional<StagePrices> table = costs.stage_prices();
  ASSERT_TRUE(table.has_value());
  // A class per size, in order of first use.
  EXPECT_EQ(table->class_of, (std::vector<std::uint32_t>{0, 1, 0, 1, 1}));
  EXPECT_EQ(table->work.size(), 4U);
  EXPECT_EQ(*table, priced_by(costs, table->class_of, 2));
  EXPECT_EQ(table->at(1, 3).fwd_ns, costs.duration_ns(schedules::make_action(1, ActionKind::F, 3)));
  EXPECT_EQ(table->at(1, 3).recompute_ns, table->at(1, 3).fwd_ns);
  EXPECT_EQ(table->at(0, 0).boundary_bytes, costs.boundary_bytes(schedules::Stage{0}, schedules::Microbatch{0}));
  EXPECT_EQ(table->step[1].step_ns, costs.duration_ns(schedules::make_action(1, ActionKind::STEP)));
}

TEST(StagePrices, ARepricingsTableHoldsItsOwnPricesOnTheBasesClasses) {
  const profiles::Profile profile = four_layer_profile();
  const ProfileCosts costs(profile, std::vector<int>{2, 2}, {2, 1, 1});
  const std::optional<StagePrices> base = costs.stage_prices();
  ASSERT_TRUE(base.has_value());
  const OverheadCosts overhead(costs, {{ActionKind::F, 7000}, {ActionKind::REDUCE_GRAD, 40}});
  const std::optional<StagePrices> table = overhead.stage_prices();
  ASSERT_TRUE(table.has_value());
  EXPECT_EQ(table->class_of, base->class_of);
  for (const std::size_t m : {0U, 1U}) {
    for (const std::size_t st : {0U, 1U}) {
      EXPECT_EQ(table->at(st, m).fwd_ns, base->at(st, m).fwd_ns + 7000);
      EXPECT_EQ(table->at(st, m).bwd_ns, base->at(st, m).bwd_ns);
      EXPECT_EQ(table->at(st, m).memory, base->at(st, m).memory);
      EXPECT_EQ(table->at(st, m).boundary_bytes, base->at(st, m).boundary_bytes);
    }
  }
  EXPECT_EQ(table->step[0].reduce_grad_ns, 40);
  // Data parallelism's reductions are in its table too, per stage.
  const DataParallelCosts replicated(costs, {.degree = 2, .link = {.latency_us = 1, .bandwidth_GBps = 1}}, {4000, 6000});
  const std::optional<StagePrices> reduced = replicated.stage_prices();
  ASSERT_TRUE(reduced.has_value());
  EXPECT_EQ(reduced->step[0].reduction_ns, replicated.gradient_reduction_ns(schedules::Stage{0}));
  EXPECT_EQ(reduced->step[1].reduction_ns, replicated.gradient_reduction_ns(schedules::Stage{1}));
  EXPECT_GT(reduced->step[1].reduction_ns, reduced->step[0].reduction_ns);
  // Jitter draws per action: no table, and none for what wraps it.
  const JitteredCosts jittered(costs, 0.2, 3);
  EXPECT_FALSE(jittered.stage_prices().has_value());
  EXPECT_FALSE(OverheadCosts(jittered, {}).stage_prices().has_value());
}

}  // namespace
}  // namespace gpipe::sim
