// The several-stages-per-rank families, small cases written out by hand:
// placement, each rank's list, the V each family takes and torch's rules for
// M. (torch_conformance_test.cpp compares the whole grid with torch itself.)
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/generators/multi_stage.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using testing::program;

ScheduleOptions multi_stage_options(int k, int m, int v = 0) {
  ScheduleOptions o;
  o.num_ranks = k;
  o.stages_per_rank = v;
  o.num_microbatches = m;
  return o;
}

std::vector<Rank> ranks(std::initializer_list<int> values) {
  std::vector<Rank> out;
  for (int v : values) out.emplace_back(v);
  return out;
}

std::string refusal(std::string_view name, const ScheduleOptions& o) {
  try {
    (void)generate(name, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(generated)";
}

// Megatron's Figure 4 and torch agree: with M a multiple of K, rank r runs
// (K-r-1)*2 + (V-1)*K forwards before its first backward; forwards go in
// groups of K micro-batches through the rank's stages in turn.
TEST(GenerateInterleaved1f1b, TwoRanksFourMicrobatchesTwoStagesEach) {
  const Schedule s = generate_interleaved_1f1b(multi_stage_options(2, 4, 2));
  EXPECT_EQ(s.name, "interleaved-1f1b");
  EXPECT_EQ(s.num_stages, 4);
  EXPECT_EQ(s.stage_to_rank, ranks({0, 1, 0, 1}));
  // Rank 0: warm-up of (2-0-1)*2 + (2-1)*2 = 4 forwards; then 1F1B, the
  // backwards starting from its last stage (2); then the drain.
  EXPECT_EQ(program(s, 0), "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3");
  // Rank 1 (holding the loss stage 3): warm-up of 2 forwards.
  EXPECT_EQ(program(s, 1), "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3");
  EXPECT_TRUE(s.overlapped.empty());
}

TEST(GenerateInterleaved1f1b, WarmupIsMegatronsWhenMIsAMultipleOfK) {
  for (int k : {2, 3, 4}) {
    for (int v : {2, 3}) {
      const int m = 2 * k;
      const Schedule s = generate_interleaved_1f1b(multi_stage_options(k, m, v));
      for (int r = 0; r < k; ++r) {
        const auto& list = s.actions(Rank{r});
        const auto first_b = std::find_if(list.begin(), list.end(),
                                          [](const Action& a) { return a.kind == ActionKind::B; });
        EXPECT_EQ(first_b - list.begin(), (k - r - 1) * 2 + (v - 1) * k + 1)  // + the F before it
            << "K=" << k << " V=" << v << " rank " << r;
        // The i-th forward of the rank runs stage r + K * ((i / K) mod V).
        int i = 0;
        for (const Action& a : list) {
          if (a.kind != ActionKind::F) continue;
          EXPECT_EQ(a.stage.value, r + k * ((i / k) % v)) << "K=" << k << " V=" << v << " rank " << r;
          ++i;
        }
      }
    }
  }
}

TEST(GenerateInterleaved1f1b, FewerMicrobatchesThanRanksRunOneRound) {
  // K=3, M=2: one round of 2; the warm-up is capped at all V*M forwards.
  const Schedule s = generate_interleaved_1f1b(multi_stage_options(3, 2, 2));
  EXPECT_EQ(program(s, 0), "0F0 0F1 3F0 3F1 3B0 3B1 0B0 0B1");
  EXPECT_EQ(program(s, 2), "2F0 2F1 5F0 5B0 5F1 5B1 2B0 2B1");
}

TEST(GenerateLoopedBfs, EveryMicrobatchThroughAStageBeforeTheNext) {
  const Schedule s = generate_looped_bfs(multi_stage_options(2, 3, 2));
  EXPECT_EQ(s.stage_to_rank, ranks({0, 1, 0, 1}));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 2F0 2F1 2F2 2B2 2B1 2B0 0B2 0B1 0B0");
  EXPECT_EQ(program(s, 1), "1F0 1F1 1F2 3F0 3F1 3F2 3B2 3B1 3B0 1B2 1B1 1B0");
  const Schedule three = generate_looped_bfs(multi_stage_options(2, 1, 3));
  EXPECT_EQ(three.stage_to_rank, ranks({0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(program(three, 1), "1F0 3F0 5F0 5B0 3B0 1B0");
}

TEST(GenerateInterleavedZb, SplitBackwardsWithWeightsLaggingByTheRank) {
  const Schedule s = generate_interleaved_zb(multi_stage_options(2, 4, 2));
  EXPECT_EQ(s.stage_to_rank, ranks({0, 1, 0, 1}));
  // Rank 0: warm-up of (V-1)*2 + (K-1-0) = 3 forwards, one per hop (not
  // two as interleaved 1F1B); then F, I steps, each W right after its I (lag 0).
  EXPECT_EQ(program(s, 0),
            "0F0 0F1 2F0 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 0W0 2F2 0I1 0W1 2F3 2I2 2W2 2I3 2W3 0I2 0W2 0I3 0W3");
  // Rank 1: warm-up 2, each W one backward behind its I (lag 1).
  EXPECT_EQ(program(s, 1),
            "1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 1W1 3F3 3I3 3W2 1I2 3W3 1I3 1W2 1W3");
}

TEST(GenerateZbv, TwoStagesPerRankInAV) {
  const Schedule s = generate_zbv(multi_stage_options(2, 4));
  EXPECT_EQ(s.num_stages, 4);
  EXPECT_EQ(s.stage_to_rank, ranks({0, 1, 1, 0}));  // rank r: stages r and 2K-1-r
  // Rank 0 warms up with 2(K-0)-1 = 3 forwards of stage 0, then meets
  // micro-batch 0 coming back down the V at stage 3 (the loss).
  EXPECT_EQ(program(s, 0),
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3");
  EXPECT_EQ(program(s, 1),
            "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3");
  EXPECT_TRUE(s.overlapped.empty());
}

TEST(GenerateZbv, FewMicrobatchesDropTheOnesTorchPlansBeyondM) {
  // K=2 plans max(2K-1, M) = 3 micro-batches; M=1 keeps micro-batch 0 only.
  const Schedule s = generate_zbv(multi_stage_options(2, 1));
  EXPECT_EQ(program(s, 0), "0F0 3F0 3I0 3W0 0I0 0W0");
  EXPECT_EQ(program(s, 1), "1F0 2F0 2I0 2W0 1I0 1W0");
}

TEST(GenerateDualPipeV, OverlappedPairsStandNextToEachOtherForwardFirst) {
  const Schedule s = generate_dualpipev(multi_stage_options(2, 5));
  EXPECT_EQ(s.stage_to_rank, ranks({0, 1, 1, 0}));
  EXPECT_EQ(program(s, 0),
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 0F4 3B2 3F3 0B1 3B3 3F4 0B2 3B4 0I3 0W3 0I4 0W4");
  // The last rank runs its first F0 and B1 apart, not overlapped (torch: a smaller bubble).
  EXPECT_EQ(program(s, 1),
            "1F0 2F0 1F1 2F1 1F2 2B0 2F2 1B0 1F3 2B1 2F3 1B1 1F4 2B2 2F4 1B2 2B3 1B3 2I4 1I4 2W4 1W4");
  const auto pair = [](const char* f, const char* b) { return OverlapPair{parse_action(f), parse_action(b)}; };
  EXPECT_EQ(s.overlapped, (std::vector<OverlapPair>{
                              pair("0F3", "3B1"), pair("3F2", "0B0"), pair("0F4", "3B2"), pair("3F3", "0B1"),
                              pair("3F4", "0B2"),  // rank 0
                              pair("2F2", "1B0"), pair("1F3", "2B1"), pair("2F3", "1B1"), pair("1F4", "2B2"),
                              pair("2F4", "1B2"),  // rank 1
                          }));
  // Every pair stands in its rank's list as forward, then backward.
  for (const OverlapPair& p : s.overlapped) {
    const auto& list = s.actions(s.rank_of(p.forward.stage));
    const auto f = std::find(list.begin(), list.end(), p.forward);
    ASSERT_NE(f, list.end());
    ASSERT_NE(f + 1, list.end());
    EXPECT_EQ(*(f + 1), p.backward) << to_string(p.forward);
  }
}

TEST(GenerateMultiStage, StagesPerRankDefaultsToTheFamilysOwn) {
  EXPECT_EQ(generate("gpipe", multi_stage_options(3, 4)).num_stages, 3);
  EXPECT_EQ(generate("1f1b", multi_stage_options(3, 4, 1)).num_stages, 3);
  for (const char* name : {"interleaved-1f1b", "looped-bfs", "interleaved-zb", "zbv", "dualpipev"}) {
    EXPECT_EQ(generate(name, multi_stage_options(3, 6)).num_stages, 6) << name;
  }
  for (const char* name : {"interleaved-1f1b", "looped-bfs", "interleaved-zb"}) {
    const Schedule s = generate(name, multi_stage_options(3, 6, 4));
    EXPECT_EQ(s.num_stages, 12) << name;
    EXPECT_EQ(s.rank_of(Stage{10}), Rank{1}) << name;
  }
}

TEST(GenerateMultiStage, RefusesStagesPerRankAFamilyCannotTake) {
  EXPECT_EQ(refusal("gpipe", multi_stage_options(2, 4, 2)),
            "--stages-per-rank 2 does not fit --schedule gpipe: it takes exactly 1 (one stage per rank)");
  EXPECT_EQ(refusal("1f1b", multi_stage_options(2, 4, 3)),
            "--stages-per-rank 3 does not fit --schedule 1f1b: it takes exactly 1 (one stage per rank)");
  EXPECT_EQ(refusal("interleaved-1f1b", multi_stage_options(2, 4, 1)),
            "--stages-per-rank 1 does not fit --schedule interleaved-1f1b: it takes 2 or more "
            "(several stages per rank, stage s on rank s mod K)");
  EXPECT_EQ(refusal("looped-bfs", multi_stage_options(2, 4, 1)),
            "--stages-per-rank 1 does not fit --schedule looped-bfs: it takes 2 or more "
            "(several stages per rank, stage s on rank s mod K)");
  EXPECT_EQ(refusal("zbv", multi_stage_options(2, 4, 3)),
            "--stages-per-rank 3 does not fit --schedule zbv: it takes exactly 2 (two stages per rank in a V)");
  EXPECT_EQ(refusal("dualpipev", multi_stage_options(2, 4, 1)),
            "--stages-per-rank 1 does not fit --schedule dualpipev: it takes exactly 2 "
            "(two stages per rank in a V)");
  EXPECT_EQ(refusal("interleaved-zb", multi_stage_options(2, 4, -1)), "--stages-per-rank must be at least 1, got -1");
}

TEST(GenerateMultiStage, RefusesWhatTorchRefusesForM) {
  // Interleaved 1F1B and interleaved ZB: M must split into max(1, M/K) equal rounds.
  EXPECT_EQ(refusal("interleaved-1f1b", multi_stage_options(4, 9, 2)),
            "--schedule interleaved-1f1b needs --microbatches to be a multiple of its number of rounds, "
            "max(1, M / K) = 2 (as torch), got M = 9 with K = 4");
  EXPECT_EQ(refusal("interleaved-zb", multi_stage_options(3, 7, 3)),
            "--schedule interleaved-zb needs --microbatches to be a multiple of its number of rounds, "
            "max(1, M / K) = 2 (as torch), got M = 7 with K = 3");
  EXPECT_EQ(generate("interleaved-1f1b", multi_stage_options(4, 10, 2)).num_microbatches, 10);  // 2 rounds of 5
  EXPECT_EQ(generate("interleaved-1f1b", multi_stage_options(4, 3, 2)).num_microbatches, 3);    // 1 round of 3
  EXPECT_EQ(refusal("dualpipev", multi_stage_options(3, 5)),
            "--schedule dualpipev needs at least as many micro-batches as stages (as torch's DualPipeV): "
            "--microbatches 5 < 2 x --stages 3");
  EXPECT_EQ(generate("dualpipev", multi_stage_options(3, 6)).num_microbatches, 6);
  EXPECT_EQ(refusal("zbv", multi_stage_options(0, 6)), "--stages must be at least 1, got 0");
  EXPECT_EQ(refusal("looped-bfs", multi_stage_options(2, 0)), "--microbatches must be at least 1, got 0");
}

}  // namespace
}  // namespace gpipe::schedules
