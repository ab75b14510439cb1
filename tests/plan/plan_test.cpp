// Planning without simulating: the partition balanced on the profile's costs,
// the generated schedule, the micro-batch sizes and static memory per rank,
// exactly; configurations that cannot exist refused with the flag's message.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/torch_csv.hpp"
#include "plan/plan.hpp"
#include "profiles/stage_costs.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::plan {
namespace {

using gpipe::testing::error_of;
using gpipe::testing::uniform_profile;

TEST(MakePlan, ScheduleSizesAndUniformPartition) {
  PlanRequest r;
  r.schedule = "1f1b";
  r.stages = 4;
  r.microbatches = 8;
  r.batch = 20;
  r.recompute = schedules::RecomputePolicy::stage;
  const Plan p = make_plan(uniform_profile(8, 10.0, 20.0), r);
  EXPECT_EQ(p.partition.layers_per_stage, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(p.microbatch_sizes, (std::vector<int>{3, 3, 3, 3, 2, 2, 2, 2}));
  EXPECT_EQ(p.batch, 20);
  EXPECT_EQ(p.schedule.name, "1f1b");
  EXPECT_EQ(p.schedule.num_stages, 4);
  EXPECT_EQ(p.schedule.num_microbatches, 8);
  EXPECT_EQ(p.schedule.recompute, schedules::RecomputePolicy::stage);
  EXPECT_FALSE(p.schedule.is_lowered());
  schedules::validate(p.schedule);
}

TEST(MakePlan, BalancesOnForwardPlusBackward) {
  // Layer costs fwd + bwd = 30, 30, 30, 90 us: two stages balance as 3,1 (90 | 90).
  profiles::Profile profile = uniform_profile(4, 10.0, 20.0);
  profile.layers[3].samples[0].fwd_us = 30.0;
  profile.layers[3].samples[0].bwd_us = 60.0;
  PlanRequest r;
  r.stages = 2;
  r.microbatches = 2;
  r.micro_batch_size = 4;
  const Plan p = make_plan(profile, r);
  EXPECT_EQ(p.partition.layers_per_stage, (std::vector<int>{3, 1}));
  EXPECT_EQ(p.microbatch_sizes, (std::vector<int>{4, 4}));
  EXPECT_EQ(p.batch, 8);
  r.partition = models::parse_partition_spec("uniform");
  EXPECT_EQ(make_plan(profile, r).partition.layers_per_stage, (std::vector<int>{2, 2}));
}

TEST(MakePlan, StaticBytesPerRankFromOptimizerAndDtype) {
  // fp32, 400 param bytes per layer = 100 parameters; adamw 16 B, momentum 12 B each.
  PlanRequest r;
  r.stages = 2;
  r.microbatches = 2;
  r.batch = 2;
  r.partition = models::parse_partition_spec("4,2");
  profiles::Profile profile = uniform_profile(6, 1.0, 1.0);
  EXPECT_EQ(make_plan(profile, r).static_bytes, (std::vector<std::int64_t>{6400, 3200}));
  r.optimizer = models::Optimizer::momentum;
  EXPECT_EQ(make_plan(profile, r).static_bytes, (std::vector<std::int64_t>{4800, 2400}));
  // bf16: 200 parameters of 2 bytes per layer, still 12 B each for momentum.
  profile.dtype = "bf16";
  EXPECT_EQ(make_plan(profile, r).static_bytes, (std::vector<std::int64_t>{9600, 4800}));
  profile.dtype = "int4";
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }), "dtype 'int4': unknown (fp32, bf16, fp16, fp8)");
}

TEST(MakePlan, WithTheSizesSplitAlready) {
  PlanRequest r;
  r.stages = 2;
  r.microbatches = 3;
  r.batch = 7;
  const profiles::Profile profile = uniform_profile(4, 1.0, 1.0);
  const Plan once = make_plan(profile, r, std::vector<int>{3, 2, 2});
  const Plan twice = make_plan(profile, r);
  EXPECT_EQ(once.microbatch_sizes, twice.microbatch_sizes);
  EXPECT_EQ(once.batch, 7);
  EXPECT_EQ(once.partition, twice.partition);
  EXPECT_EQ(once.schedule, twice.schedule);
}

TEST(MakePlan, RejectsConfigurationsThatCannotExist) {
  const profiles::Profile profile = uniform_profile(4, 1.0, 1.0);
  PlanRequest r;
  r.stages = 5;
  r.microbatches = 2;
  r.batch = 8;
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }),
            "--stages 5 exceeds the 4 layers of the profile: every stage needs at least one layer");
  r.stages = 0;
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }), "--stages must be at least 1, got 0");
  // The stage count is checked before the batch: K names the first flag at fault.
  r.microbatches = 9;
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }), "--stages must be at least 1, got 0");
  r.stages = 2;
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }),
            "--microbatches 9 exceeds --batch 8: every micro-batch needs a sample");
  r.microbatches = 2;
  r.partition = models::parse_partition_spec("1,2");
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }), "--partition 1,2 sums to 3 layers, the model has 4");
  r.partition = {};
  r.batch = 0;
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }), "give --batch N or --micro-batch-size b");
  r.batch = 8;
  r.schedule = "zb-h9";
  EXPECT_EQ(error_of([&] { (void)make_plan(profile, r); }),
            fmt::format("unknown schedule 'zb-h9' (known: {})", fmt::join(schedules::schedule_names(), ", ")));
}

TEST(MakePlan, AGivenSchedule) {
  // A V-shaped schedule of 2 ranks and 4 stages, M = 2, as a file gives it.
  schedules::Schedule v = interop::schedule_from_csv(
      "0F0,0F1,3F0,3B0,3F1,3B1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n", "v.csv", "v");
  PlanRequest base;
  base.batch = 6;
  base.recompute = schedules::RecomputePolicy::stage;
  const PlanRequest r = for_schedule(base, v);
  EXPECT_EQ(r.schedule, "v");
  EXPECT_EQ(r.stages, 2);  // ranks
  EXPECT_EQ(r.stages_per_rank, 2);
  EXPECT_EQ(r.microbatches, 2);
  const Plan p = make_plan(uniform_profile(8, 10.0, 20.0), r);
  EXPECT_EQ(p.partition.layers_per_stage, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(p.microbatch_sizes, (std::vector<int>{3, 3}));
  EXPECT_EQ(p.schedule.ranks, v.ranks);
  EXPECT_EQ(p.schedule.num_ranks, 2);
  // Compute-only: the request's recompute policy applies.
  EXPECT_EQ(p.schedule.recompute, schedules::RecomputePolicy::stage);
  // Rank 0 holds stages 0 and 3: twice the parameters of one stage.
  EXPECT_EQ(p.static_bytes[0], p.static_bytes[1]);

  EXPECT_EQ(error_of([&] { (void)make_plan(uniform_profile(3, 1.0, 1.0), r); }),
            "schedule v has 4 stages, more than the 3 layers of the profile: every stage needs at least one layer");
  PlanRequest few = r;
  few.batch = 1;
  EXPECT_EQ(error_of([&] { (void)make_plan(uniform_profile(8, 1.0, 1.0), few); }),
            "--batch 1 is fewer samples than the 2 micro-batches of schedule v: every micro-batch needs a sample");
  // A lowered one keeps its own policy and refuses another.
  PlanRequest lowered = for_schedule(base, schedules::lower(v));
  EXPECT_EQ(error_of([&] { (void)make_plan(uniform_profile(8, 1.0, 1.0), lowered); }),
            "--recompute stage: schedule v is lowered already, with recompute never");
  lowered.recompute = schedules::RecomputePolicy::never;
  EXPECT_TRUE(make_plan(uniform_profile(8, 1.0, 1.0), lowered).schedule.is_lowered());
}

// A planner keeps partitions and stage costs: what it gives, kept or made,
// and what it refuses, are make_plan's and profiles::stage_costs'.
TEST(Planner, PlansAndStageCostsAreMakePlansKeptOrNot) {
  profiles::Profile profile = uniform_profile(6, 10.0, 20.0, 100, 10);
  profile.layers[4].samples[0].fwd_us = 70.0;  // uneven, so that the balanced partition depends on K
  Planner planner(profile);
  for (int round = 0; round < 2; ++round) {  // the second round finds everything kept
    for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b"}) {
      for (const char* spec : {"balanced", "uniform", "1,2,3"}) {
        for (int k = 1; k <= 7; ++k) {
          for (int m : {1, 2, 3, 5, 8, 13}) {
            PlanRequest r;
            r.schedule = name;
            r.stages = k;
            r.microbatches = m;
            r.batch = 12;
            r.partition = models::parse_partition_spec(spec);
            const std::string what = fmt::format("{} {} K={} M={}", name, spec, k, m);
            const std::string expected_error = error_of([&] { (void)make_plan(profile, r); });
            EXPECT_EQ(error_of([&] { (void)planner.make(r); }), expected_error) << what;
            if (expected_error != "no error") continue;
            const Plan expected = make_plan(profile, r);
            const Plan got = planner.make(r);
            EXPECT_EQ(got.partition, expected.partition) << what;
            EXPECT_EQ(got.schedule, expected.schedule) << what;
            EXPECT_EQ(got.microbatch_sizes, expected.microbatch_sizes) << what;
            EXPECT_EQ(got.static_bytes, expected.static_bytes) << what;
            for (const int b : got.microbatch_sizes) {
              EXPECT_EQ(*planner.stage_costs(got.partition.layers_per_stage, b),
                        profiles::stage_costs(profile, got.partition.layers_per_stage, b))
                  << what;
            }
          }
        }
      }
    }
  }
  const std::vector<int> bad = {1, 1};  // 2 layers of 6
  EXPECT_EQ(error_of([&] { (void)planner.stage_costs(bad, 1); }),
            error_of([&] { (void)profiles::stage_costs(profile, bad, 1); }));
  EXPECT_NE(error_of([&] { (void)planner.stage_costs(bad, 1); }), "no error");
}

}  // namespace
}  // namespace gpipe::plan
