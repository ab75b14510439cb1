// The simulator's traces follow Perfetto's rules (timelines/trace_lint.hpp)
// for every schedule it predicts, with either link sharing and with
// overlapped pairs run concurrently: no lane merged, no slice dropped, every
// send's arrow drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "sim/scenario.hpp"
#include "sim/zb_auto.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/trace_lint.hpp"

namespace gpipe::sim {
namespace {

int count(const nlohmann::json& trace, const std::string& ph) {
  int n = 0;
  for (const auto& ev : trace["traceEvents"]) n += ev["ph"] == ph;
  return n;
}

TEST(TraceLintSim, EveryScheduleGivesATraceViewersReadWhole) {
  const profiles::Profile profile = profiles::load_profile(profiles::resolve_profile(profiles::kDefaultProfile));
  for (const std::string& name : predictable_schedule_names()) {
    for (const LinkSharing sharing : {LinkSharing::fifo, LinkSharing::shared}) {
      Scenario sc;
      sc.request.schedule = name;
      sc.request.stages = 4;
      sc.request.microbatches = 8;
      sc.request.batch = 8;
      sc.conditions.link_sharing = sharing;
      if (name == "dualpipev" && sharing == LinkSharing::shared) sc.conditions.overlap_share = 0.5;
      const Prediction p = predict(profile, sc);
      const nlohmann::json trace = timelines::to_chrome_trace(p.timeline);
      for (const std::string& finding : timelines::lint_chrome_trace(trace)) {
        ADD_FAILURE() << name << " (" << to_string(sharing) << "): " << finding;
      }
      int sends = 0;
      for (const auto& a : p.timeline.actions) {
        sends += a.action.kind == schedules::ActionKind::SEND_F || a.action.kind == schedules::ActionKind::SEND_B;
      }
      EXPECT_GT(sends, 0) << name;
      EXPECT_EQ(count(trace, "s"), sends) << name;  // one arrow per message
      EXPECT_EQ(count(trace, "f"), sends) << name;
    }
  }
}

// With tensor parallelism each compute action's collectives lie inside it, on
// the rank's tensor-parallel lane (a second one where an overlapped pair's
// meet), and the trace still reads whole and back to the same timeline.
TEST(TraceLintSim, TensorParallelCollectivesLieInsideTheirActions) {
  const models::Model split = models::split_tensor_parallel(
      models::parse_model("transformer:layers=8,hidden=1024,heads=16,seq=512"), {.degree = 4});
  const std::vector<int> sizes{1};
  const profiles::Profile profile =
      profiles::analytic_profile(split, profiles::device_named("h100"), models::DType::bf16, sizes);
  for (const std::string name : {"1f1b", "dualpipev"}) {
    Scenario sc;
    sc.request.schedule = name;
    sc.request.stages = name == "dualpipev" ? 4 : 2;
    sc.request.microbatches = 8;
    sc.request.batch = 8;
    if (name == "dualpipev") sc.conditions.overlap_share = 0.5;
    const Prediction p = predict(profile, sc);
    ASSERT_FALSE(p.timeline.collectives.empty()) << name;
    EXPECT_EQ(p.timeline.info.tensor_parallel, 4);
    for (const timelines::CollectiveSpan& c : p.timeline.collectives) {
      const auto in = std::ranges::find_if(p.timeline.actions, [&](const timelines::TimedAction& a) {
        return a.rank == c.rank && a.action == c.within && a.stream != timelines::Stream::reduce;
      });
      ASSERT_NE(in, p.timeline.actions.end()) << name;
      EXPECT_LE(in->start_ns, c.start_ns) << name << " " << to_string(c.within);
      EXPECT_LE(c.end_ns, in->end_ns) << name << " " << to_string(c.within);
    }
    const nlohmann::json trace = timelines::to_chrome_trace(p.timeline);
    for (const std::string& finding : timelines::lint_chrome_trace(trace)) ADD_FAILURE() << name << ": " << finding;
    EXPECT_EQ(timelines::timeline_from_chrome_trace(nlohmann::json::parse(trace.dump()), name).collectives,
              p.timeline.collectives);
  }
}

}  // namespace
}  // namespace gpipe::sim
