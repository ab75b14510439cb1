// The simulator's traces follow Perfetto's rules (schedules/trace_lint.hpp)
// for every schedule it predicts, with either link sharing and with
// overlapped pairs run concurrently: no lane merged, no slice dropped, every
// send's arrow drawn.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "schedules/chrome_trace.hpp"
#include "schedules/trace_lint.hpp"
#include "sim/scenario.hpp"
#include "sim/zb_auto.hpp"

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
      const nlohmann::json trace = schedules::to_chrome_trace(p.timeline);
      for (const std::string& finding : schedules::lint_chrome_trace(trace)) {
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

}  // namespace
}  // namespace gpipe::sim
