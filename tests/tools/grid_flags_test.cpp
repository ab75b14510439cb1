// The shared command-line pieces without a tool around them: the grid flags
// parsed by CLI11 into a grid of plan requests, and the LIST syntax.
#include <gtest/gtest.h>

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/generate.hpp"
#include "tests/error_of.hpp"
#include "tools/common/grid_flags.hpp"
#include "tools/common/int_list.hpp"

namespace gpipe::tools {
namespace {

using gpipe::testing::error_of;

plan::RequestGrid parse_grid(std::vector<std::string> args,
                      std::vector<std::string> known_schedules = schedules::schedule_names()) {
  CLI::App app{"test"};
  GridFlags flags;
  flags.known_schedules = std::move(known_schedules);
  flags.add_to(app, 1 << 20);
  args.insert(args.begin(), "test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  plan::RequestGrid grid;
  flags.apply_to(grid);
  return grid;
}

TEST(GridFlags, MakeAGridOfPlanRequests) {
  const plan::RequestGrid g = parse_grid({"-K", "1..3", "-M", "2,8", "-N", "16", "--schedule", "1f1b,gpipe",
                                   "--recompute", "always"});
  EXPECT_EQ(g.stages, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(g.microbatches, (std::vector<int>{2, 8}));
  EXPECT_EQ(g.schedules, (std::vector<std::string>{"1f1b", "gpipe"}));
  EXPECT_EQ(g.recompute, (std::vector<schedules::RecomputePolicy>{schedules::RecomputePolicy::stage}));
  EXPECT_EQ(g.base.batch, 16);
  EXPECT_EQ(g.requests().size(), 2u * 3u * 2u);
}

TEST(GridFlags, DefaultsAndUnknownNames) {
  const plan::RequestGrid g = parse_grid({"-K", "2", "-M", "4", "-N", "8"});
  EXPECT_EQ(g.schedules, (std::vector<std::string>{"gpipe"}));
  EXPECT_EQ(g.recompute, (std::vector<schedules::RecomputePolicy>{schedules::RecomputePolicy::never}));
  EXPECT_EQ(error_of([] { (void)parse_grid({"-K", "2", "-M", "4", "-N", "8", "--schedule", "gpipe,zb"}); }),
            fmt::format("--schedule: unknown value 'zb' (known: {})", fmt::join(schedules::schedule_names(), ", ")));
  EXPECT_EQ(error_of([] { (void)parse_grid({"-K", "2", "-M", "4", "-N", "8", "--recompute", "sometimes"}); }),
            "--recompute: unknown value 'sometimes' (known: never, stage, stage_except_last, full)");
}

TEST(GridFlags, ACommandMayKnowMoreSchedules) {
  // gpipe-sim sweep adds zb-auto, which only the simulator can make.
  const std::vector<std::string> known = {"gpipe", "zb-auto"};
  EXPECT_EQ(parse_grid({"-K", "2", "-M", "4", "-N", "8", "--schedule", "zb-auto"}, known).schedules,
            (std::vector<std::string>{"zb-auto"}));
  EXPECT_EQ(error_of([&] { (void)parse_grid({"-K", "2", "-M", "4", "-N", "8", "--schedule", "1f1b"}, known); }),
            "--schedule: unknown value '1f1b' (known: gpipe, zb-auto)");
}

TEST(IntList, ValuesAndRanges) {
  EXPECT_EQ(parse_int_list("1..4,8, 16", "--stages"), (std::vector<int>{1, 2, 3, 4, 8, 16}));
  EXPECT_EQ(error_of([] { (void)parse_int_list("8..1", "--stages"); }).rfind("--stages: ", 0), 0u);
}

}  // namespace
}  // namespace gpipe::tools
