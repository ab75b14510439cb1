// What torch's schedule files mean to the engine, exact to the ns: a send
// wait ends when its message has arrived, housekeeping costs what the cost
// model says (0 from a profile) in program order, SEND/RECV placement changes
// nothing, and --overlap-f-b runs an overlapped pair concurrently.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/files.hpp"
#include "interop/schedule_file.hpp"
#include "interop/torch_csv.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "sim/engine.hpp"
#include "sim/profile_costs.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/metrics.hpp"
#include "timelines/trace_lanes.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;
using schedules::Stage;
using timelines::Stream;

const std::string kData = std::string(GPIPE_TEST_DATA_DIR) + "/torch_csv/";

// Every stage alike: F takes tf, B tb, I and W half of tb each; housekeeping
// `housekeeping` ns; `boundary` bytes travel between stages.
class Costs final : public CostModel {
 public:
  Costs(std::int64_t tf, std::int64_t tb, std::int64_t boundary = 0, std::int64_t housekeeping = 0)
      : tf_(tf), tb_(tb), boundary_(boundary), housekeeping_(housekeeping) {}
  std::int64_t duration_ns(const Action& a) const override {
    switch (a.kind) {
      case ActionKind::F:
      case ActionKind::R: return tf_;
      case ActionKind::B: return tb_;
      case ActionKind::I: return tb_ / 2;
      case ActionKind::W: return tb_ - tb_ / 2;
      case ActionKind::STEP: return 0;
      default:
        if (schedules::is_housekeeping(a.kind)) return housekeeping_;
        ADD_FAILURE() << "asked the cost of " << schedules::to_string(a);
        return 0;
    }
  }
  std::int64_t boundary_bytes(Stage, schedules::Microbatch) const override { return boundary_; }
  std::int64_t activation_bytes(Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(Stage, schedules::Microbatch) const override { return 0; }

 private:
  std::int64_t tf_, tb_, boundary_, housekeeping_;
};

Schedule csv(const std::string& text) { return interop::schedule_from_csv(text, "t.csv", "t"); }

// Simulates twice, recording and not, and checks that the running totals give
// the metrics of the recorded timeline, whose streams never overlap.
SimResult run(const Schedule& s, const CostModel& costs, const LinkModel& links,
              LinkSharing sharing = LinkSharing::fifo, std::optional<double> overlap = std::nullopt) {
  SimOptions options;
  options.link_sharing = sharing;
  options.overlap_share = overlap;
  SimResult recorded = simulate(s, costs, links, options);
  options.record_timeline = false;
  const SimResult totals = simulate(s, costs, links, options);
  EXPECT_EQ(totals.metrics, recorded.metrics);
  EXPECT_EQ(timelines::compute_metrics(recorded.timeline), recorded.metrics);
  EXPECT_NO_THROW(timelines::check_no_overlap(recorded.timeline, "sim"));
  return recorded;
}

const timelines::TimedAction& find_action(const SimResult& r, const char* text) {
  const Action a = schedules::parse_action(text);
  const auto& acts = r.timeline.actions;
  const auto it = std::find_if(acts.begin(), acts.end(), [&](const auto& x) { return x.action == a; });
  if (it == acts.end()) throw std::runtime_error(std::string("no ") + text);
  return *it;
}

// GPipe, K = 2, M = 2, lowered by hand as torch would not: rank 0 waits for
// its first send to complete before its second forward. F 100 ns, B 200 ns,
// a message 1 us + 2000 B at 1 GB/s = 3000 ns.
//   0F0 [0, 100]; its message [100, 3100]; 0WAIT_SEND_F0 at 3100;
//   0F1 [3100, 3200] (100 without the wait); its message [3200, 6200];
//   1F0 [3100, 3200]; 1F1 [6200, 6300]; 1B0 [6300, 6500]; 1B1 [6500, 6700];
//   gradients on link 1->0: [6500, 9500], then FIFO [9500, 12500];
//   0B0 [9500, 9700]; 0B1 [12500, 12700]; 0WAIT_SEND_F1 (arrived 6200) at 12700.
constexpr const char* kWaitFirstSend =
    "0F0,0SEND_F0,0WAIT_SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0WAIT_SEND_F1\n"
    "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1\n";

TEST(TorchSemantics, SendWaitEndsWhenItsMessageArrives) {
  const SimResult r = run(csv(kWaitFirstSend), Costs(100, 200, 2000), UniformLink(1.0, 1.0));
  EXPECT_EQ(find_action(r, "0WAIT_SEND_F0").start_ns, 3100);
  EXPECT_EQ(find_action(r, "0WAIT_SEND_F0").end_ns, 3100);
  EXPECT_EQ(find_action(r, "0WAIT_SEND_F0").stream, Stream::compute);
  EXPECT_EQ(find_action(r, "0F1").start_ns, 3100);
  EXPECT_EQ(find_action(r, "1F1").start_ns, 6200);
  EXPECT_EQ(find_action(r, "0B0").start_ns, 9500);
  EXPECT_EQ(find_action(r, "0B1").start_ns, 12500);
  EXPECT_EQ(find_action(r, "0WAIT_SEND_F1").start_ns, 12700);
  EXPECT_EQ(r.metrics.step_time_ns, 12700);
  EXPECT_EQ(r.metrics.ranks[0].busy_ns, 600);  // a wait is no work

  // Without the first wait, 0F1 runs at once and its message queues behind the first.
  std::string no_wait = kWaitFirstSend;
  no_wait.erase(no_wait.find("0WAIT_SEND_F0,"), std::string("0WAIT_SEND_F0,").size());
  const SimResult free_running = run(csv(no_wait), Costs(100, 200, 2000), UniformLink(1.0, 1.0));
  EXPECT_EQ(find_action(free_running, "0F1").start_ns, 100);
  EXPECT_EQ(find_action(free_running, "1F1").start_ns, 6100);

  // The shared-bandwidth replay agrees where each message is alone on its link.
  const SimResult shared = run(csv(kWaitFirstSend), Costs(100, 200, 2000), UniformLink(1.0, 1.0),
                               LinkSharing::shared);
  EXPECT_EQ(find_action(shared, "0WAIT_SEND_F0").start_ns, 3100);
  EXPECT_EQ(find_action(shared, "0F1").start_ns, 3100);
  EXPECT_EQ(find_action(shared, "1F1").start_ns, 6200);
}

TEST(TorchSemantics, HousekeepingRunsInProgramOrderAtTheCostModelsPrice) {
  const Schedule s = csv("0UNSHARD,0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n");
  const SimResult free = run(s, Costs(100, 200), FreeLink());
  EXPECT_EQ(free.metrics.step_time_ns, 300);
  EXPECT_EQ(find_action(free, "0WAIT_REDUCE_GRAD").start_ns, 300);
  const SimResult priced = run(s, Costs(100, 200, 0, 50), FreeLink());
  EXPECT_EQ(find_action(priced, "0F0").start_ns, 50);
  EXPECT_EQ(find_action(priced, "0RESHARD").start_ns, 450);
  EXPECT_EQ(priced.metrics.step_time_ns, 500);
  // A profile prices none of them.
  const profiles::Profile profile = gpipe::testing::uniform_profile(2, 1.0, 2.0);
  const std::vector<int> layers = {1, 1};
  const ProfileCosts costs(profile, layers, {1});
  for (auto kind : {ActionKind::UNSHARD, ActionKind::RESHARD, ActionKind::REDUCE_GRAD, ActionKind::WAIT_REDUCE_GRAD}) {
    EXPECT_EQ(costs.duration_ns(schedules::make_action(1, kind)), 0);
  }
  EXPECT_EQ(costs.duration_ns(schedules::make_action(1, ActionKind::F, 0)), 1000);
}

TEST(TorchSemantics, NoStepInTheFileGetsStepAtTheEnd) {
  // Torch's files leave the optimizer to the caller; the engine adds STEP of
  // each stage at the end of its rank, as lowering would.
  const SimResult r = run(csv("0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n"), Costs(100, 200), FreeLink());
  EXPECT_EQ(find_action(r, "0STEP").start_ns, 600);
  EXPECT_EQ(find_action(r, "1STEP").start_ns, 400);
}

Schedule compute_only(Schedule s) {
  for (auto& list : s.ranks) std::erase_if(list, [](const Action& a) { return !schedules::is_work(a.kind); });
  return s;
}

TEST(TorchSemantics, TorchFilesWithCommsTakeTheirComputeOnlySchedulesStepTime) {
  // Receives posted early and sends waited for where torch waits for them change nothing.
  for (const char* name : {"dualpipev_k2_m4_comms.csv", "interleaved_zb_k2_m4_v2_comms.csv", "1f1b_k4_m8_comms.csv"}) {
    const Schedule with_comms = interop::read_schedule_file(kData + name);
    const Schedule plain = compute_only(with_comms);
    ASSERT_FALSE(plain.is_lowered());
    for (const auto& link : {UniformLink(0.0, 1e9), UniformLink(3.0, 0.5)}) {
      const Costs costs(1000, 2000, 4000);
      const SimResult a = run(with_comms, costs, link);
      const SimResult b = run(plain, costs, link);
      EXPECT_EQ(a.metrics, b.metrics) << name;
    }
  }
  // Torch's 1F1B, lowered by torch, is our 1F1B.
  Schedule ours = schedules::generate("1f1b", {.num_ranks = 4, .num_microbatches = 8});
  ours.name = "1f1b_k4_m8_comms";  // the file's name: the same family, so the same closed form
  const Costs costs(1000, 2000, 4000);
  EXPECT_EQ(run(interop::read_schedule_file(kData + "1f1b_k4_m8_comms.csv"), costs, FreeLink()).metrics,
            run(ours, costs, FreeLink()).metrics);
  // DualPipeV with comms and compute-only, as torch writes both.
  EXPECT_EQ(run(interop::read_schedule_file(kData + "dualpipev_k2_m4_comms.csv"), costs, FreeLink()).metrics,
            run(interop::read_schedule_file(kData + "dualpipev_k2_m4.csv"), costs, FreeLink()).metrics);
}

// One rank holds stages 0 and 1; F 300 ns, B 500 ns.
// In turn: 0F0 [0,300] 1F0 [300,600] 0F1 [600,900] 1B0 [900,1400] 1F1 [1400,1700]
//          1B1 [1700,2200] 0B0 [2200,2700] 0B1 [2700,3200].
// Share 0.8: the pair starts at 600; 0F1 takes 375 (to 975), 1B0 625 (to 1225);
//          then 1F1 [1225,1525] 1B1 [1525,2025] 0B0 [2025,2525] 0B1 [2525,3025].
constexpr const char* kV = "0F0,1F0,(0F1;1B0)OVERLAP_F_B,1F1,1B1,0B0,0B1\n";

TEST(TorchSemantics, OverlappedPairInTurnByDefault) {
  const SimResult r = run(csv(kV), Costs(300, 500), FreeLink());
  EXPECT_EQ(find_action(r, "0F1").start_ns, 600);
  EXPECT_EQ(find_action(r, "1B0").start_ns, 900);
  EXPECT_EQ(r.metrics.step_time_ns, 3200);
}

TEST(TorchSemantics, OverlappedPairConcurrentlyWithAShare) {
  for (const auto sharing : {LinkSharing::fifo, LinkSharing::shared}) {
    const SimResult r = run(csv(kV), Costs(300, 500), FreeLink(), sharing, 0.8);
    EXPECT_EQ(find_action(r, "0F1").start_ns, 600);
    EXPECT_EQ(find_action(r, "0F1").end_ns, 975);
    EXPECT_EQ(find_action(r, "0F1").stream, Stream::compute);
    EXPECT_EQ(find_action(r, "1B0").start_ns, 600);
    EXPECT_EQ(find_action(r, "1B0").end_ns, 1225);
    EXPECT_EQ(find_action(r, "1B0").stream, Stream::overlap);
    EXPECT_EQ(find_action(r, "1F1").start_ns, 1225);
    EXPECT_EQ(find_action(r, "0B1").end_ns, 3025);
    EXPECT_EQ(r.metrics.step_time_ns, 3025);
    EXPECT_EQ(r.metrics.ranks[0].busy_ns, 3025);  // busy while the stream is occupied: the longer of the pair
  }
  EXPECT_EQ(run(csv(kV), Costs(300, 500), FreeLink(), LinkSharing::fifo, 1.0).metrics.step_time_ns, 2900);
  EXPECT_EQ(run(csv(kV), Costs(300, 500), FreeLink(), LinkSharing::fifo, 0.5).metrics.step_time_ns, 3400);
}

TEST(TorchSemantics, OverlapTraceKeepsEveryLaneFreeOfOverlapsAndReadsBack) {
  const SimResult r = run(csv(kV), Costs(300, 500), FreeLink(), LinkSharing::fifo, 0.8);
  const auto tids = timelines::assign_lanes(r.timeline);
  const auto at = std::find_if(r.timeline.actions.begin(), r.timeline.actions.end(),
                               [](const auto& a) { return a.stream == Stream::overlap; });
  ASSERT_NE(at, r.timeline.actions.end());
  EXPECT_EQ(tids[static_cast<std::size_t>(at - r.timeline.actions.begin())], timelines::kOverlapTid);
  EXPECT_EQ(timelines::lane_name(timelines::kOverlapTid), "overlap");
  const auto path = std::filesystem::temp_directory_path() / "gpipe_overlap_trace.json";
  timelines::write_chrome_trace(r.timeline, path);
  const timelines::Timeline back = timelines::read_chrome_trace(path);
  std::filesystem::remove(path);
  EXPECT_EQ(timelines::compute_metrics(back).step_time_ns, 3025);
  EXPECT_EQ(timelines::compute_metrics(back).ranks[0].busy_ns, 3025);
}

TEST(TorchSemantics, OverlapAcrossRanksKeepsTheBooks) {
  // DualPipeV as torch writes it (K = 2, M = 4, three pairs per rank), F 1 us,
  // B 2 us. Each rank is busy 24 us; the step takes 25 us in turn. Perfectly
  // overlapped, a pair takes max(F, B): each of the three on the critical
  // path saves 1 us. With messages of 0.14 us everything shifts by 0.56 us.
  // With slow links (5 us a message) the links decide the step either way.
  // run() checks the books: totals and recorded timeline agree, no lane overlaps.
  const Schedule s = interop::read_schedule_file(kData + "dualpipev_k2_m4_comms.csv");
  const Costs costs(1000, 2000, 4000);
  for (const auto sharing : {LinkSharing::fifo, LinkSharing::shared}) {
    EXPECT_EQ(run(s, costs, FreeLink(), sharing).metrics.step_time_ns, 25'000);
    EXPECT_EQ(run(s, costs, FreeLink(), sharing, 1.0).metrics.step_time_ns, 22'000);
    EXPECT_EQ(run(s, costs, UniformLink(0.1, 100.0), sharing).metrics.step_time_ns, 25'560);
    EXPECT_EQ(run(s, costs, UniformLink(0.1, 100.0), sharing, 1.0).metrics.step_time_ns, 22'560);
    (void)run(s, costs, UniformLink(1.0, 1.0), sharing, 0.6);
  }
}

TEST(TorchSemantics, OverlapErrors) {
  const Schedule same = csv("0F0,0B0\n");  // (0F0;0B0): the backward needs its forward
  Schedule pair = same;
  pair.overlapped.push_back({schedules::parse_action("0F0"), schedules::parse_action("0B0")});
  SimOptions options;
  options.overlap_share = 0.9;
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)simulate(pair, Costs(1, 1), FreeLink(), options); }),
            "--overlap-f-b: the overlapped pair (0F0;0B0)OVERLAP_F_B cannot run concurrently: its backward "
            "needs its forward");
  options.overlap_share = 1.5;
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)simulate(same, Costs(1, 1), FreeLink(), options); }),
            "--overlap-f-b must be from 0.5 (no gain) to 1 (perfect overlap), got 1.5");
}

}  // namespace
}  // namespace gpipe::sim
