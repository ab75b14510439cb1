// The zero-bubble greedy list scheduler: exact lists where its choices can be
// followed by hand, the caps it keeps, and a valid schedule for every policy
// and cost shape of a grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "schedules/generators/zb_greedy.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using testing::program;

using testing::options;

ZbGreedyCosts uniform(int k, std::int64_t t = 10, std::int64_t transfer = 0) {
  const auto n = static_cast<std::size_t>(k);
  return {std::vector<std::int64_t>(n, t), std::vector<std::int64_t>(n, t), std::vector<std::int64_t>(n, t),
          std::vector<std::int64_t>(n - 1, transfer)};
}

ZbGreedyPolicy flat(int k, int cap, ReadyFirst first = ReadyFirst::input_backward,
                    WeightFill fill = WeightFill::eager) {
  return {std::vector<int>(static_cast<std::size_t>(k), cap), first, fill};
}

int peak_in_flight_until_w(const Schedule& s, int rank) {
  int now = 0;
  int peak = 0;
  for (const Action& a : s.actions(Rank{rank})) {
    if (a.kind == ActionKind::F) peak = std::max(peak, ++now);
    if (a.kind == ActionKind::W) --now;
  }
  return peak;
}

TEST(ZbGreedy, OneInFlightRunsEachMicrobatchThrough) {
  for (const auto fill : {WeightFill::eager, WeightFill::gaps_only}) {
    const Schedule s = greedy_zero_bubble(options(3, 3), uniform(3), flat(3, 1, ReadyFirst::forward, fill));
    EXPECT_EQ(s.name, "zb-greedy");
    for (int r = 0; r < 3; ++r) {
      const std::string p = std::to_string(r);
      EXPECT_EQ(program(s, r), fmt::format("{0}F0 {0}I0 {0}W0 {0}F1 {0}I1 {0}W1 {0}F2 {0}I2 {0}W2", p));
    }
  }
}

TEST(ZbGreedy, OneFOneBsCapsGiveOneFOneBWithItsBackwardSplit) {
  // Caps K-r: rank r warms up with K-r forwards, and must run a W before each
  // further F; with equal times every W lands right after its I.
  const int k = 4;
  const Schedule s = greedy_zero_bubble(options(k, 8), uniform(k), {{4, 3, 2, 1}, ReadyFirst::input_backward, WeightFill::eager});
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7");
  EXPECT_EQ(program(s, 3), "3F0 3I0 3W0 3F1 3I1 3W1 3F2 3I2 3W2 3F3 3I3 3W3 3F4 3I4 3W4 3F5 3I5 3W5 3F6 3I6 3W6 3F7 3I7 3W7");
}

TEST(ZbGreedy, EagerAndGapsOnlyDifferWhereAWWouldDelayAnInput) {
  // K=2, M=2, F = I = 10, W = 15, transfer 5, two in flight. Rank 1: 1F0 [15,25],
  // 1I0 [25,35], 1F1 [35,45], 1I1 [45,55], then its W's. Rank 0: 0F0 [0,10],
  // 0F1 [10,20], waits for 0I0 [40,50]; at 50 only 0W0 is ready, and 0I1's
  // gradient arrives at 60. Eager runs 0W0 [50,65] and delays 0I1 to 65; gaps
  // only waits, as 0W0 would not end by 60.
  ZbGreedyCosts c = uniform(2, 10, 5);
  c.weight_backward_ns = {15, 15};
  const Schedule eager = greedy_zero_bubble(options(2, 2), c, flat(2, 2));
  EXPECT_EQ(program(eager, 0), "0F0 0F1 0I0 0W0 0I1 0W1");
  EXPECT_EQ(program(eager, 1), "1F0 1I0 1F1 1I1 1W0 1W1");
  const Schedule gaps = greedy_zero_bubble(options(2, 2), c, flat(2, 2, ReadyFirst::input_backward, WeightFill::gaps_only));
  EXPECT_EQ(program(gaps, 0), "0F0 0F1 0I0 0I1 0W0 0W1");
  EXPECT_EQ(program(gaps, 1), "1F0 1I0 1F1 1I1 1W0 1W1");
  // With one in flight on rank 1, 1W0 must run before 1F1, gaps or not: nothing
  // else can arrive until it has.
  const Schedule capped = greedy_zero_bubble(options(2, 2), c, {{2, 1}, ReadyFirst::input_backward, WeightFill::gaps_only});
  EXPECT_EQ(program(capped, 1), "1F0 1I0 1W0 1F1 1I1 1W1");
}

TEST(ZbGreedy, KeepsItsCapsAndIsValidForEveryPolicy) {
  const std::vector<ZbGreedyCosts> shapes = {
      uniform(5, 10),
      {{10, 10, 10, 10, 30}, {12, 12, 12, 12, 30}, {5, 5, 5, 5, 20}, {0, 0, 0, 0}},  // heavy last stage
      {{30, 10, 10, 10, 10}, {10, 10, 10, 10, 10}, {40, 1, 1, 1, 1}, {25, 25, 25, 25}},  // slow links
      {{7, 0, 3, 9, 1}, {0, 4, 4, 0, 2}, {3, 3, 0, 0, 5}, {1, 0, 2, 0}},  // zero-time actions
  };
  int checked = 0;
  for (const ZbGreedyCosts& five : shapes) {
    for (int k = 1; k <= 5; ++k) {
      ZbGreedyCosts c = five;
      c.forward_ns.resize(k);
      c.input_backward_ns.resize(k);
      c.weight_backward_ns.resize(k);
      c.transfer_ns.resize(k - 1);
      for (int m = 1; m <= 9; ++m) {
        for (int cap = 1; cap <= 2 * k + 1; ++cap) {
          for (const auto first : {ReadyFirst::input_backward, ReadyFirst::forward}) {
            for (const auto fill : {WeightFill::eager, WeightFill::gaps_only}) {
              ZbGreedyPolicy policy = flat(k, cap, first, fill);
              policy.max_in_flight.back() = std::max(1, cap - 1);  // caps may differ by rank
              const Schedule s = greedy_zero_bubble(options(k, m, RecomputePolicy::stage_except_last), c, policy);
              ASSERT_EQ(s.total_actions(), 3 * k * m);
              for (int r = 0; r < k; ++r) EXPECT_LE(peak_in_flight_until_w(s, r), policy.max_in_flight[r]);
              const auto errors = find_errors(s);
              EXPECT_TRUE(errors.empty()) << to_string(policy) << " K=" << k << " M=" << m << ": "
                                          << errors.front().message;
              EXPECT_TRUE(find_errors(lower(s)).empty());
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 4 * 9 * (3 + 5 + 7 + 9 + 11));
}

TEST(ZbGreedy, PolicyLabels) {
  EXPECT_EQ(to_string(flat(3, 5)), "in flight 5, I first, W eager");
  EXPECT_EQ(to_string(ZbGreedyPolicy{{4, 3, 2}, ReadyFirst::forward, WeightFill::gaps_only}),
            "in flight 4,3,2, F first, W in gaps");
}

TEST(ZbGreedy, RejectsCostsAndCapsThatDoNotFitK) {
  EXPECT_THROW((void)greedy_zero_bubble(options(3, 2), uniform(2), flat(3, 1)), InputError);
  EXPECT_THROW((void)greedy_zero_bubble(options(3, 2), uniform(3), flat(2, 1)), InputError);
  EXPECT_THROW((void)greedy_zero_bubble(options(3, 2), uniform(3), flat(3, 0)), InputError);
  EXPECT_THROW((void)greedy_zero_bubble(options(3, 2), uniform(3, -1), flat(3, 1)), InputError);
  EXPECT_THROW((void)greedy_zero_bubble(options(0, 2), uniform(1), flat(1, 1)), InputError);
}

}  // namespace
}  // namespace gpipe::schedules
