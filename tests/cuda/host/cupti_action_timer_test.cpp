// The CUPTI action timer on the host, with mocked records: one external id
// per measured action, and each action's interval from the records its id
// claims, from the step's origin (the earliest rank's).
#include <gtest/gtest.h>

#include "exec/cuda/backend/cupti_action_timer.hpp"
#include "exec/cuda/cupti/mock_activity_source.hpp"

namespace gpipe::exec::cuda {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::make_action;
using schedules::Rank;

TEST(CuptiActionTimer, PushesOneIdPerActionAndBuildsIntervalsFromItsRecords) {
  cupti::MockActivitySource source;
  source.start();
  std::int64_t clock = 10'000;
  CuptiActionTimer timer(2, source, [&] { return clock; }, 2);
  const ActionTimer::Clock::time_point host{};  // the CUPTI timer reads its own clock
  const Action f = make_action(0, ActionKind::F, 0);
  const Action b = make_action(0, ActionKind::B, 0);

  timer.start_step(Rank{1}, 1, host);  // rank 1 leaves the barrier later
  clock = 9'000;
  timer.start_step(Rank{0}, 1, host);  // the origin is the earliest: 9000
  timer.begin({Rank{0}, 1, 0, f});  // on the compute stream, which CUPTI does not read
  timer.end({Rank{0}, 1, 0, f});
  timer.begin({Rank{0}, 1, 1, b});
  timer.end({Rank{0}, 1, 1, b});
  EXPECT_EQ(source.depth(), 0u);
  const std::uint64_t id_f = CuptiActionTimer::external_id(Rank{0}, 1, 0);
  const std::uint64_t id_b = CuptiActionTimer::external_id(Rank{0}, 1, 1);
  EXPECT_EQ(id_f, 1'000'000'001u);
  EXPECT_EQ(source.pushed(), (std::vector<std::uint64_t>{id_f, id_b}));

  source.records.external = {{id_f, 5}, {id_b, 6}, {42, 7}};
  source.records.kernels = {{"f", 9'500, 9'900, 1, 5, 0}, {"b", 10'000, 10'700, 1, 6, 0},
                            {"warmup", 100, 200, 1, 7, 0}};
  timer.finish();
  const MeasuredIntervals intervals = timer.intervals(1);
  ASSERT_EQ(intervals.size(), 2u);
  EXPECT_EQ(intervals.at({Rank{0}, f}), (Interval{500, 900}));
  EXPECT_EQ(intervals.at({Rank{0}, b}), (Interval{1'000, 1'700}));
  EXPECT_EQ(timer.origin_ns(1), 9'000);

  // Only the step's own work is kept for the trace.
  const cupti::ActivityRecords kept = records_of(timer.records(), timer.ids(1));
  ASSERT_EQ(kept.kernels.size(), 2u);
  EXPECT_EQ(kept.kernels[0].name, "f");
  EXPECT_EQ(kept.external.size(), 2u);
}

}  // namespace
}  // namespace gpipe::exec::cuda
