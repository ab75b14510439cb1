// Generators: exact action lists for GPipe (both backward orders) and 1F1B,
// including M < K, K = 1 and M = 1.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using testing::program;

ScheduleOptions options_with_order(int k, int m, BackwardOrder order = BackwardOrder::reverse) {
  ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  o.backward_order = order;
  return o;
}

TEST(GenerateGpipe, FillDrainReverseBackwards) {
  const Schedule s = generate_gpipe(options_with_order(4, 3));
  EXPECT_EQ(s.name, "gpipe");
  EXPECT_EQ(s.num_ranks, 4);
  EXPECT_EQ(s.num_stages, 4);
  EXPECT_EQ(s.num_microbatches, 3);
  EXPECT_EQ(s.stage_to_rank, (std::vector<Rank>{Rank{0}, Rank{1}, Rank{2}, Rank{3}}));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0B2 0B1 0B0");
  EXPECT_EQ(program(s, 3), "3F0 3F1 3F2 3B2 3B1 3B0");
  EXPECT_FALSE(s.is_lowered());
}

TEST(GenerateGpipe, ForwardBackwardOrder) {
  const Schedule s = generate_gpipe(options_with_order(2, 4, BackwardOrder::forward));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0F3 0B0 0B1 0B2 0B3");
  EXPECT_EQ(program(s, 1), "1F0 1F1 1F2 1F3 1B0 1B1 1B2 1B3");
}

TEST(GenerateGpipe, SingleStageAndSingleMicrobatch) {
  EXPECT_EQ(program(generate_gpipe(options_with_order(1, 1)), 0), "0F0 0B0");
  EXPECT_EQ(program(generate_gpipe(options_with_order(1, 3)), 0), "0F0 0F1 0F2 0B2 0B1 0B0");
  const Schedule s = generate_gpipe(options_with_order(3, 1));
  EXPECT_EQ(program(s, 1), "1F0 1B0");
  EXPECT_EQ(program(s, 2), "2F0 2B0");
}

TEST(Generate1f1b, WarmupSteadyDrain) {
  const Schedule s = generate_1f1b(options_with_order(4, 6));
  EXPECT_EQ(s.name, "1f1b");
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5");
  EXPECT_EQ(program(s, 1), "1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1B4 1B5");
  EXPECT_EQ(program(s, 2), "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2B5");
  EXPECT_EQ(program(s, 3), "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5");
}

TEST(Generate1f1b, FewerMicrobatchesThanStages) {
  const Schedule s = generate_1f1b(options_with_order(4, 2));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0B0 0B1");
  EXPECT_EQ(program(s, 2), "2F0 2F1 2B0 2B1");
  EXPECT_EQ(program(s, 3), "3F0 3B0 3F1 3B1");
}

TEST(Generate1f1b, SingleStage) {
  EXPECT_EQ(program(generate_1f1b(options_with_order(1, 3)), 0), "0F0 0B0 0F1 0B1 0F2 0B2");
}

TEST(Generate, EveryRankRunsEachForwardAndBackwardOnce) {
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int k = 1; k <= 7; ++k) {
      for (int m = 1; m <= 9; ++m) {
        const Schedule s = generate(name, options_with_order(k, m));
        ASSERT_EQ(static_cast<int>(s.ranks.size()), k);
        for (int r = 0; r < k; ++r) EXPECT_EQ(static_cast<int>(s.ranks[r].size()), 2 * m) << name;
      }
    }
  }
}

TEST(Generate, RejectsUnknownNamesAndEmptyPipelines) {
  EXPECT_THROW((void)generate("zb-h3", options_with_order(2, 2)), InputError);
  EXPECT_THROW((void)generate("gpipe", options_with_order(0, 2)), InputError);
  EXPECT_THROW((void)generate("1f1b", options_with_order(2, 0)), InputError);
  try {
    (void)generate("interleaved", options_with_order(2, 2));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown schedule 'interleaved' (known: gpipe, 1f1b, interleaved-1f1b, looped-bfs, "
                 "interleaved-zb, zbv, dualpipev, zb-h1, zb-h2)");
  }
}

TEST(Generate, EveryListedNameGenerates) {
  // The command lines check --schedule against this list: each name on it must generate.
  EXPECT_EQ(schedule_names(), (std::vector<std::string>{"gpipe", "1f1b", "interleaved-1f1b", "looped-bfs",
                                                        "interleaved-zb", "zbv", "dualpipev", "zb-h1", "zb-h2"}));
  // K=2, M=4: a configuration every family takes (dualpipev needs M >= 2K).
  for (const std::string& name : schedule_names()) EXPECT_EQ(generate(name, options_with_order(2, 4)).name, name);
  EXPECT_EQ(recompute_policy_names(), (std::vector<std::string>{"never", "stage", "stage_except_last", "full"}));
  for (const std::string& name : recompute_policy_names()) {
    EXPECT_EQ(to_string(parse_recompute_policy(name).value()), name);
  }
  // GPipe's stage-wide policies under their former names, which files and scripts of before hold.
  EXPECT_EQ(parse_recompute_policy("always"), RecomputePolicy::stage);
  EXPECT_EQ(parse_recompute_policy("except_last"), RecomputePolicy::stage_except_last);
  EXPECT_EQ(parse_recompute_policy("sometimes"), std::nullopt);
  EXPECT_EQ(accepted_recompute_policy_names(),
            (std::vector<std::string>{"never", "stage", "stage_except_last", "full", "always", "except_last"}));
}

TEST(GenerateFamilies, TheInterleavedOnesTakeAVOfOnesChoice) {
  for (const std::string& name : schedule_names()) {
    const bool chosen = name == "interleaved-1f1b" || name == "looped-bfs" || name == "interleaved-zb";
    EXPECT_EQ(takes_stages_per_rank(name), chosen) << name;
    // What it says is what generate() does: V = 3 runs, or is refused.
    const ScheduleOptions o{.num_ranks = 2, .stages_per_rank = 3, .num_microbatches = 4};
    bool ran = true;
    try {
      (void)generate(name, o);
    } catch (const InputError&) {
      ran = false;
    }
    EXPECT_EQ(ran, chosen) << name;
  }
  EXPECT_FALSE(takes_stages_per_rank("no-such-family"));
}

}  // namespace
}  // namespace gpipe::schedules
