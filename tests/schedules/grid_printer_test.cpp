// The rank x step grid: exact layouts of fill/drain under unit-time list
// scheduling, marked cells, and the `stuck` row of a schedule that cannot finish.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "schedules/generate.hpp"
#include "schedules/grid_printer.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"

namespace gpipe::schedules {
namespace {

// A schedule from action texts, one list per rank; stage s on rank s unless `map` says otherwise.
Schedule hand_schedule(int stages, int microbatches, const std::vector<std::vector<std::string>>& ranks,
                       std::vector<Rank> map = {}) {
  Schedule s;
  s.name = "hand";
  s.num_ranks = static_cast<int>(ranks.size());
  s.num_stages = stages;
  s.num_microbatches = microbatches;
  s.stage_to_rank = map.empty() ? one_stage_per_rank(stages) : std::move(map);
  for (const auto& list : ranks) {
    s.ranks.emplace_back();
    for (const auto& text : list) s.ranks.back().push_back(parse_action(text));
  }
  return s;
}

Schedule gpipe_schedule(int k, int m) { return generate("gpipe", {.num_ranks = k, .num_microbatches = m, .backward_order = BackwardOrder::reverse, .recompute = RecomputePolicy::never}); }

TEST(GridPrinter, GpipeFillAndDrain) {
  EXPECT_EQ(format_grid(gpipe_schedule(2, 2)),
            "step  rank 0  rank 1\n"
            "   0  0F0     .\n"
            "   1  0F1     1F0\n"
            "   2  .       1F1\n"
            "   3  .       1B1\n"
            "   4  0B1     1B0\n"
            "   5  0B0\n");
}

TEST(GridPrinter, OneFOneB) {
  EXPECT_EQ(format_grid(generate("1f1b", {.num_ranks = 3, .num_microbatches = 4, .backward_order = BackwardOrder::reverse, .recompute = RecomputePolicy::never})),
            "step  rank 0  rank 1  rank 2\n"
            "   0  0F0     .       .\n"
            "   1  0F1     1F0     .\n"
            "   2  0F2     1F1     2F0\n"
            "   3  .       .       2B0\n"
            "   4  .       1B0     2F1\n"
            "   5  0B0     1F2     2B1\n"
            "   6  0F3     1B1     2F2\n"
            "   7  0B1     1F3     2B2\n"
            "   8  .       1B2     2F3\n"
            "   9  0B2     .       2B3\n"
            "  10  .       1B3\n"
            "  11  0B3\n");
}

TEST(GridPrinter, SingleStageSingleMicrobatch) {
  EXPECT_EQ(format_grid(gpipe_schedule(1, 1)), "step  rank 0\n   0  0F0\n   1  0B0\n");
}

TEST(GridPrinter, LoweredMatchesComputeOnlyPlusStep) {
  // Comm takes no time and is not drawn; STEP takes one step, after the last backward.
  EXPECT_EQ(format_grid(lower(gpipe_schedule(2, 2))),
            "step  rank 0  rank 1\n"
            "   0  0F0     .\n"
            "   1  0F1     1F0\n"
            "   2  .       1F1\n"
            "   3  .       1B1\n"
            "   4  0B1     1B0\n"
            "   5  0B0     1STEP\n"
            "   6  0STEP\n");
}

TEST(GridPrinter, RecomputeTakesAStep) {
  const Schedule s = lower(generate("gpipe", {.num_ranks = 1, .num_microbatches = 2, .backward_order = BackwardOrder::forward, .recompute = RecomputePolicy::stage}));
  EXPECT_EQ(format_grid(s), "step  rank 0\n   0  0F0\n   1  0F1\n   2  0R0\n   3  0B0\n"
                            "   4  0R1\n   5  0B1\n   6  0STEP\n");
}

TEST(GridPrinter, SeveralStagesPerRank) {
  const Schedule s = hand_schedule(4, 1, {{"0F0", "2F0", "2B0", "0B0"}, {"1F0", "3F0", "3B0", "1B0"}},
                                   {Rank{0}, Rank{1}, Rank{0}, Rank{1}});
  const std::string expected =
      "step  rank 0  rank 1\n"
      "   0  0F0     .\n"
      "   1  .       1F0\n"
      "   2  2F0     .\n"
      "   3  .       3F0\n"
      "   4  .       3B0\n"
      "   5  2B0     .\n"
      "   6  .       1B0\n"
      "   7  0B0\n";
  EXPECT_EQ(format_grid(s), expected);
  // Lowered: the comm between ranks is invisible, the STEPs come last.
  EXPECT_EQ(format_grid(lower(s)), expected.substr(0, expected.size() - 4) +
                                       "0B0     1STEP\n"
                                       "   8  0STEP   3STEP\n"
                                       "   9  2STEP\n");
}

TEST(GridPrinter, MarkedCell) {
  EXPECT_EQ(format_grid(gpipe_schedule(2, 2), {Position{Rank{1}, 1}, Position{Rank{0}, 3}}),
            "step  rank 0  rank 1\n"
            "   0  0F0     .\n"
            "   1  0F1     1F0\n"
            "   2  .       [1F1]\n"
            "   3  .       1B1\n"
            "   4  0B1     1B0\n"
            "   5  [0B0]\n");
}

TEST(GridPrinter, DeadlockEndsWithStuckRow) {
  const Schedule s = hand_schedule(2, 2, {{"0F0", "0B0", "0F1", "0B1"}, {"1F1", "1F0", "1B0", "1B1"}});
  EXPECT_EQ(format_grid(s),
            "step   rank 0  rank 1\n"
            "    0  0F0     .\n"
            "stuck  [0B0]   [1F1]\n");
}

TEST(GridPrinter, MarksTheCycleFromValidation) {
  const Schedule s = hand_schedule(2, 2, {{"0F0", "0B0", "0F1", "0B1"}, {"1F1", "1F0", "1B0", "1B1"}});
  const auto errors = find_errors(s);
  ASSERT_EQ(errors.size(), 1u);
  // 0F1, 1F0 and 1B0 are on the cycle too, but never reached: only the stuck row shows.
  EXPECT_EQ(format_grid(s, errors[0].where), format_grid(s));
}

TEST(GridPrinter, MissingDependencyIsStuck) {
  EXPECT_EQ(format_grid(hand_schedule(2, 1, {{"0B0"}, {"1F0", "1B0"}})),
            "step   rank 0  rank 1\n"
            "stuck  [0B0]   [1F0]\n");
}

TEST(GridPrinter, StuckOnAReceiveShowsIt) {
  Schedule s = lower(gpipe_schedule(2, 1));
  std::erase(s.ranks[0], parse_action("0SEND_F0"));
  EXPECT_EQ(format_grid(s),
            "step   rank 0      rank 1\n"
            "    0  0F0         .\n"
            "stuck  [0RECV_B0]  [1RECV_F0]\n");
}

TEST(GridPrinter, MalformedActionDoesNotCrash) {
  const std::string grid = format_grid(hand_schedule(1, 1, {{"0F0", "5F0", "0B0"}}));
  EXPECT_EQ(grid, "step   rank 0\n    0  0F0\nstuck  [5F0]\n");
}

TEST(GridPrinter, IsDeterministic) {
  const Schedule s = lower(generate("1f1b", {.num_ranks = 4, .num_microbatches = 6, .backward_order = BackwardOrder::reverse, .recompute = RecomputePolicy::stage_except_last}));
  EXPECT_EQ(format_grid(s), format_grid(s));
  // Every row is the header or a step; the pipeline never stalls.
  EXPECT_EQ(format_grid(s).find("stuck"), std::string::npos);
}

TEST(GridPrinter, TooLargeAtTenMillionCells) {
  // Steps are at most the actions (2 a rank for GPipe with M = 1), columns the ranks.
  EXPECT_FALSE(grid_too_large(generate_gpipe({.num_ranks = 2000, .num_microbatches = 1})));  // 4000 x 2000
  EXPECT_TRUE(grid_too_large(generate_gpipe({.num_ranks = 3000, .num_microbatches = 1})));   // 6000 x 3000
}

}  // namespace
}  // namespace gpipe::schedules
