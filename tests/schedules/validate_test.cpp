// Schedule validation: every generated schedule passes; each error kind is
// found on a hand-made schedule and named by rank, step and action.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"

namespace gpipe::schedules {
namespace {

using Kind = ScheduleError::Kind;

// A schedule from action texts, one list per rank; stage s on rank s unless `map` says otherwise.
Schedule make(int stages, int microbatches, const std::vector<std::vector<std::string>>& ranks,
              RecomputePolicy recompute = RecomputePolicy::never, std::vector<Rank> map = {}) {
  Schedule s;
  s.name = "hand";
  s.num_ranks = static_cast<int>(ranks.size());
  s.num_stages = stages;
  s.num_microbatches = microbatches;
  s.stage_to_rank = map.empty() ? one_stage_per_rank(stages) : std::move(map);
  s.recompute = recompute;
  for (const auto& list : ranks) {
    s.ranks.emplace_back();
    for (const auto& text : list) s.ranks.back().push_back(parse_action(text));
  }
  return s;
}

Schedule gpipe(int k, int m, RecomputePolicy recompute = RecomputePolicy::never) {
  return generate("gpipe", {.num_ranks = k, .num_microbatches = m, .backward_order = BackwardOrder::reverse, .recompute = recompute});
}

// The single error of `kind` in `s` (fails when there is not exactly one).
ScheduleError only(const Schedule& s, Kind kind) {
  std::vector<ScheduleError> found;
  for (auto& e : find_errors(s)) {
    if (e.kind == kind) found.push_back(e);
  }
  EXPECT_EQ(found.size(), 1u) << "errors of kind " << to_string(kind);
  return found.empty() ? ScheduleError{kind, "", {}} : found.front();
}

bool mentions(const ScheduleError& e, const std::string& part) {
  return e.message.find(part) != std::string::npos;
}

void expect_at(const ScheduleError& e, std::size_t i, int rank, int step) {
  ASSERT_LT(i, e.where.size()) << e.message;
  EXPECT_EQ(e.where[i].rank.value, rank) << e.message;
  EXPECT_EQ(e.where[i].step, step) << e.message;
}

TEST(Validate, EveryGeneratedScheduleIsValid) {
  int checked = 0;
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int k = 1; k <= 6; ++k) {
      for (int m = 1; m <= 9; ++m) {
        for (auto order : {BackwardOrder::reverse, BackwardOrder::forward}) {
          for (auto policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
            const Schedule compute = generate(name, {.num_ranks = k, .num_microbatches = m, .backward_order = order, .recompute = policy});
            for (const Schedule& s : {compute, lower(compute)}) {
              const auto errors = find_errors(s);
              EXPECT_TRUE(errors.empty()) << name << " K=" << k << " M=" << m << " lowered="
                                          << s.is_lowered() << ": " << errors.front().message;
              EXPECT_NO_THROW(validate(s));
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 6 * 9 * 2 * 3 * 2);
}

TEST(Validate, EverySeveralStagesPerRankScheduleIsValid) {
  // The multi-stage families over K 1..6, M 1..12 and the V each takes, under
  // every recompute policy, compute-only and lowered. The only refusals are
  // torch's rules for M: interleaved-1f1b and interleaved-zb refuse 10 of the
  // 72 (K, M) (M not in max(1, M/K) equal rounds), dualpipev 36 (M < 2K).
  struct Family {
    const char* name;
    std::vector<int> stages_per_rank;
  };
  const Family families[] = {{"interleaved-1f1b", {2, 3, 4}}, {"looped-bfs", {2, 3, 4}},
                             {"interleaved-zb", {2, 3, 4}},   {"zbv", {2}},
                             {"dualpipev", {2}}};
  int generated = 0;
  int refused = 0;
  for (const Family& family : families) {
    for (int v : family.stages_per_rank) {
      for (int k = 1; k <= 6; ++k) {
        for (int m = 1; m <= 12; ++m) {
          for (auto policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
            Schedule compute;
            try {
              compute = generate(family.name, {.num_ranks = k, .stages_per_rank = v, .num_microbatches = m,
                                               .recompute = policy});
            } catch (const InputError& e) {
              EXPECT_NE(std::string(e.what()).find("--microbatches"), std::string::npos) << e.what();
              ++refused;
              continue;
            }
            for (const Schedule& s : {compute, lower(compute)}) {
              const auto errors = find_errors(s);
              EXPECT_TRUE(errors.empty()) << family.name << " K=" << k << " M=" << m << " V=" << v
                                          << " lowered=" << s.is_lowered() << ": " << errors.front().message;
            }
            ++generated;
          }
        }
      }
    }
  }
  EXPECT_EQ(generated, 3 * (2 * 3 * 62 + 3 * 72 + 72 + 36));
  EXPECT_EQ(refused, 3 * (2 * 3 * 10 + 36));
}

TEST(Validate, SeveralStagesPerRankAreValidLoweredOrNot) {
  const Schedule s = make(4, 1, {{"0F0", "2F0", "2B0", "0B0"}, {"1F0", "3F0", "3B0", "1B0"}},
                          RecomputePolicy::never, {Rank{0}, Rank{1}, Rank{0}, Rank{1}});
  EXPECT_TRUE(find_errors(s).empty());
  EXPECT_TRUE(find_errors(lower(s)).empty());
}

TEST(Validate, KeepsTheFirstHundredErrorsAndCountsTheRest) {
  // 1F1B, K=2, M=200, with rank 0's list emptied: its 400 actions are missing, and
  // every one of rank 1's that needs them is out of order.
  Schedule s = generate_1f1b({.num_ranks = 2, .num_microbatches = 200});
  s.ranks[0].clear();
  std::size_t total = 0;
  const auto errors = find_errors(s, &total);
  EXPECT_EQ(errors.size(), kMaxKeptErrors);
  EXPECT_GT(total, kMaxKeptErrors);
  EXPECT_EQ(find_errors(s).size(), kMaxKeptErrors);
}

TEST(Validate, BadHeader) {
  Schedule s = gpipe(2, 2);
  s.num_microbatches = 0;
  EXPECT_TRUE(mentions(only(s, Kind::bad_header), "num_microbatches must be at least 1, got 0"));

  s = gpipe(2, 2);
  s.stage_to_rank.pop_back();
  EXPECT_TRUE(mentions(only(s, Kind::bad_header), "stage_to_rank has 1 entries but num_stages is 2"));

  s = gpipe(2, 2);
  s.stage_to_rank[1] = Rank{7};
  EXPECT_TRUE(mentions(only(s, Kind::bad_header), "stage_to_rank[1] = 7 is not a rank"));

  s = gpipe(2, 2);
  s.ranks.pop_back();
  EXPECT_TRUE(mentions(only(s, Kind::bad_header), "ranks has 1 action lists but num_ranks is 2"));

  s = gpipe(2, 2);
  s.stage_to_rank[1] = Rank{0};
  const auto e = only(s, Kind::bad_header);
  EXPECT_TRUE(mentions(e, "rank 1 owns no stage")) << e.message;
  // The header stops the search: nothing else is reported.
  EXPECT_EQ(find_errors(s).size(), 1u);
}

TEST(Validate, ActionOutOfRange) {
  auto e = only(make(2, 2, {{"0F0", "0F1", "0B1", "0B0"}, {"1F0", "1F1", "1B1", "1B0", "2F0"}}),
                Kind::bad_action);
  EXPECT_EQ(e.message, "rank 1 step 4: 2F0 cannot exist: names stage 2 but the schedule has stages 0..1");
  expect_at(e, 0, 1, 4);

  e = only(make(1, 2, {{"0F0", "0F1", "0F2", "0B1", "0B0"}}), Kind::bad_action);
  EXPECT_TRUE(mentions(e, "rank 0 step 2: 0F2 cannot exist: names micro-batch 2")) << e.message;

  Schedule s = lower(gpipe(1, 1));
  s.ranks[0].back().microbatch = Microbatch{3};
  e = only(s, Kind::bad_action);
  EXPECT_TRUE(mentions(e, "rank 0 step 2: 0STEP cannot exist: has micro-batch 3")) << e.message;
}

TEST(Validate, ActionOnTheWrongRank) {
  const auto e = only(make(2, 1, {{"0F0", "1F0", "0B0"}, {"1B0"}}), Kind::bad_action);
  EXPECT_EQ(e.message, "rank 0 step 1: 1F0 is listed on rank 0 but stage 1 runs on rank 1");
  expect_at(e, 0, 0, 1);
}

TEST(Validate, ImpossibleComm) {
  Schedule s = lower(gpipe(2, 1));
  s.ranks[1].insert(s.ranks[1].begin() + 2, parse_action("1SEND_F0"));
  auto e = only(s, Kind::bad_action);
  EXPECT_TRUE(mentions(e, "rank 1 step 2: 1SEND_F0 cannot exist: the last stage")) << e.message;

  s = lower(gpipe(2, 1));
  s.ranks[0].insert(s.ranks[0].begin() + 1, parse_action("0SEND_B0"));
  e = only(s, Kind::bad_action);
  EXPECT_TRUE(mentions(e, "rank 0 step 1: 0SEND_B0 cannot exist: stage 0 has no previous stage")) << e.message;

  // Stages 0 and 1 share rank 0: nothing travels between them.
  s = make(3, 1, {{"0F0", "0SEND_F0", "1F0", "1SEND_F0", "1RECV_B0", "1B0", "0B0", "0STEP", "1STEP"},
                  {"2RECV_F0", "2F0", "2B0", "2SEND_B0", "2STEP"}},
           RecomputePolicy::never, {Rank{0}, Rank{0}, Rank{1}});
  e = only(s, Kind::bad_action);
  EXPECT_EQ(e.message, "rank 0 step 1: 0SEND_F0 cannot exist: stage 1 is on the same rank, nothing travels");
}

TEST(Validate, RecomputeUnderPolicyNever) {
  const auto e = only(make(1, 1, {{"0F0", "0R0", "0B0", "0STEP"}}), Kind::bad_action);
  EXPECT_EQ(e.message, "rank 0 step 1: 0R0 cannot exist: the recompute policy is never");
}

TEST(Validate, MissingComputeActions) {
  auto e = only(make(1, 2, {{"0F0", "0B1", "0B0"}}), Kind::missing);
  EXPECT_EQ(e.message, "rank 0: missing 0F1 (needed by 0B1 at rank 0 step 1)");
  expect_at(e, 0, 0, 1);

  e = only(make(2, 1, {{"0F0", "0B0"}, {"1F0"}}), Kind::missing);
  EXPECT_EQ(e.message, "rank 1: missing 1B0 (or 1I0 and 1W0) for 1F0 at rank 1 step 0");

  e = only(make(1, 1, {{"0F0", "0I0"}}), Kind::missing);
  EXPECT_TRUE(mentions(e, "rank 0: missing 0W0, the weight backward of 0I0 at rank 0 step 1")) << e.message;

  e = only(make(1, 1, {{"0F0", "0W0"}}), Kind::missing);
  EXPECT_TRUE(mentions(e, "rank 0: missing 0I0, the input backward of 0W0")) << e.message;
}

TEST(Validate, SplitBackwardIsValid) {
  EXPECT_TRUE(find_errors(make(2, 1, {{"0F0", "0I0", "0W0"}, {"1F0", "1I0", "1W0"}})).empty());
  EXPECT_TRUE(find_errors(lower(make(2, 1, {{"0F0", "0I0", "0W0"}, {"1F0", "1I0", "1W0"}}))).empty());
}

TEST(Validate, MissingInLoweredSchedule) {
  Schedule s = lower(gpipe(2, 1));
  std::erase(s.ranks[0], parse_action("0STEP"));
  EXPECT_EQ(only(s, Kind::missing).message, "rank 0: missing 0STEP (the schedule is lowered)");

  s = lower(gpipe(2, 2));
  std::erase(s.ranks[0], parse_action("0SEND_F1"));
  std::erase(s.ranks[1], parse_action("1RECV_F1"));
  EXPECT_EQ(only(s, Kind::missing).message,
            "rank 0: missing 0SEND_F1 and its receive 1RECV_F1 on rank 1 (the schedule is lowered)");

  s = lower(gpipe(2, 2, RecomputePolicy::stage));
  std::erase(s.ranks[1], parse_action("1R0"));
  const auto e = only(s, Kind::missing);
  EXPECT_TRUE(mentions(e, "rank 1: missing 1R0 (recompute stage) before 1B0 at rank 1 step")) << e.message;
}

TEST(Validate, ExceptLastAcceptsRecomputeEitherWay) {
  Schedule s = lower(gpipe(2, 2, RecomputePolicy::stage_except_last));
  ASSERT_FALSE(std::erase(s.ranks[0], parse_action("0R0")) == 0);
  EXPECT_TRUE(find_errors(s).empty());
  s = lower(gpipe(2, 2, RecomputePolicy::stage_except_last));
  auto& rank1 = s.ranks[1];
  // Rank 1 runs 1F1 then 1B1 straight away, so lowering skipped 1R1; add it back.
  const auto b = std::find(rank1.begin(), rank1.end(), parse_action("1B1"));
  ASSERT_NE(b, rank1.end());
  ASSERT_EQ(std::count(rank1.begin(), rank1.end(), parse_action("1R1")), 0);
  rank1.insert(b, parse_action("1R1"));
  EXPECT_TRUE(find_errors(s).empty());
}

TEST(Validate, DuplicateNamesBothPositions) {
  const auto e = only(make(1, 2, {{"0F0", "0F1", "0F0", "0B1", "0B0"}}), Kind::duplicate);
  EXPECT_EQ(e.message, "rank 0 step 2: 0F0 duplicates 0F0 at rank 0 step 0");
  expect_at(e, 0, 0, 0);
  expect_at(e, 1, 0, 2);
}

TEST(Validate, FullBackwardMixedWithSplit) {
  const auto e = only(make(1, 1, {{"0F0", "0I0", "0B0", "0W0"}}), Kind::duplicate);
  EXPECT_EQ(e.message, "rank 0 step 2: 0B0 mixes the full backward with the split 0I0 at rank 0 step 1");
}

TEST(Validate, BackwardBeforeForward) {
  auto e = only(make(1, 2, {{"0F0", "0B1", "0F1", "0B0"}}), Kind::backward_before_forward);
  EXPECT_EQ(e.message, "rank 0 step 1: 0B1 comes before its forward 0F1 at step 2");
  expect_at(e, 0, 0, 1);
  expect_at(e, 1, 0, 2);
  // Reported as this, not as a generic cycle.
  EXPECT_EQ(find_errors(make(1, 2, {{"0F0", "0B1", "0F1", "0B0"}})).size(), 1u);

  e = only(make(1, 1, {{"0F0", "0W0", "0I0"}}), Kind::backward_before_forward);
  EXPECT_EQ(e.message, "rank 0 step 1: 0W0 comes before its input backward 0I0 at step 2");

  e = only(make(1, 1, {{"0F0", "0B0", "0R0", "0STEP"}}, RecomputePolicy::stage),
           Kind::backward_before_forward);
  EXPECT_EQ(e.message, "rank 0 step 1: 0B0 comes before its recompute 0R0 at step 2");
}

TEST(Validate, UnmatchedComm) {
  Schedule s = lower(gpipe(2, 2));
  std::erase(s.ranks[1], parse_action("1RECV_F1"));
  auto e = only(s, Kind::unmatched_comm);
  EXPECT_EQ(e.message, "rank 0 step 3: 0SEND_F1 has no matching 1RECV_F1 on rank 1");
  expect_at(e, 0, 0, 3);

  s = lower(gpipe(2, 2));
  std::erase(s.ranks[1], parse_action("1SEND_B0"));
  e = only(s, Kind::unmatched_comm);
  EXPECT_TRUE(mentions(e, ": 0RECV_B0 has no matching 1SEND_B0 on rank 1")) << e.message;
  EXPECT_TRUE(mentions(e, "rank 0 step ")) << e.message;
}

TEST(Validate, DeadlockIsReportedAsTheCycle) {
  const Schedule s = make(2, 2, {{"0F0", "0B0", "0F1", "0B1"}, {"1F1", "1F0", "1B0", "1B1"}});
  const auto errors = find_errors(s);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, Kind::cycle);
  EXPECT_EQ(errors[0].message,
            "deadlock: 0B0 (rank 0 step 1) -> 0F1 (rank 0 step 2) -> 1F1 (rank 1 step 0) -> "
            "1F0 (rank 1 step 1) -> 1B0 (rank 1 step 2) -> 0B0");
  ASSERT_EQ(errors[0].where.size(), 5u);
  expect_at(errors[0], 0, 0, 1);
  expect_at(errors[0], 4, 1, 2);
}

TEST(Validate, DeadlockThroughCommInLoweredSchedule) {
  Schedule s = lower(gpipe(2, 1));  // rank 0: 0F0 0SEND_F0 0RECV_B0 0B0 0STEP
  std::swap(s.ranks[0][0], s.ranks[0][1]);
  const auto e = only(s, Kind::cycle);
  EXPECT_EQ(e.message, "deadlock: 0SEND_F0 (rank 0 step 0) -> 0F0 (rank 0 step 1) -> 0SEND_F0");
}

TEST(Validate, NoCycleReportWhenStructurallyBroken) {
  // The deadlock above, with 1B1 missing: only the missing action is reported.
  const auto errors = find_errors(make(2, 2, {{"0F0", "0B0", "0F1", "0B1"}, {"1F1", "1F0", "1B0"}}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, Kind::missing);
}

TEST(Validate, ThrowsTheFirstErrorAsInputError) {
  try {
    validate(make(1, 2, {{"0F0", "0B1", "0F1", "0B0"}}));
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "rank 0 step 1: 0B1 comes before its forward 0F1 at step 2");
  }
  EXPECT_NO_THROW(validate(gpipe(3, 4)));
}

TEST(Validate, KindNames) {
  EXPECT_EQ(to_string(Kind::bad_header), "bad_header");
  EXPECT_EQ(to_string(Kind::backward_before_forward), "backward_before_forward");
  EXPECT_EQ(to_string(Kind::cycle), "cycle");
}

}  // namespace
}  // namespace gpipe::schedules
