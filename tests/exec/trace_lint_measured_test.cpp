// The executor's measured traces follow Perfetto's rules
// (timelines/trace_lint.hpp) for every schedule family it trains, its
// receives included, which start waiting before their sends.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "exec/cpu/cpu_backend.hpp"
#include "schedules/generate.hpp"
#include "tests/exec/trainer_support.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/trace_lint.hpp"

namespace gpipe::exec {
namespace {

TEST(TraceLintMeasured, EveryFamilysMeasuredStepIsATraceViewersReadWhole) {
  for (const std::string& family : schedules::schedule_names()) {
    schedules::ScheduleOptions s;
    s.num_ranks = 2;
    s.num_microbatches = 4;
    schedules::Schedule schedule = schedules::generate(family, s);
    trainer_test::RunConfig c;
    c.model = "mlp:layers=4,hidden=8";  // 5 layers: room for 2 x 2 stages
    c.stages = schedule.num_stages;
    c.microbatches = 4;
    c.batch = 8;
    c.steps = 2;
    TrainOptions o = trainer_test::options_for(c);
    o.schedule = std::move(schedule);
    const TrainResult r = cpu::train(o);
    const nlohmann::json trace = timelines::to_chrome_trace(r.timeline);
    for (const std::string& finding : timelines::lint_chrome_trace(trace)) ADD_FAILURE() << family << ": " << finding;
    int arrows = 0;
    for (const auto& ev : trace["traceEvents"]) arrows += ev["ph"] == "f";
    EXPECT_GT(arrows, 0) << family;
  }
}

}  // namespace
}  // namespace gpipe::exec
