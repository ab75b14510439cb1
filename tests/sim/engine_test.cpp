// The engine against closed forms and hand-computed cases, exact to the ns.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "sim/engine.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;
using schedules::Stage;

// K identical stages: F takes tf, B takes tb, R takes tf; A / In bytes each.
class UniformCosts final : public CostModel {
 public:
  UniformCosts(std::int64_t tf, std::int64_t tb, std::int64_t a = 0, std::int64_t in = 0,
               std::int64_t boundary = 0, std::int64_t kept_for_w = -1)
      : tf_(tf), tb_(tb), a_(a), in_(in), boundary_(boundary), w_(kept_for_w < 0 ? a : kept_for_w) {}
  std::int64_t duration_ns(const Action& action) const override {
    switch (action.kind) {
      case ActionKind::F:
      case ActionKind::R: return tf_;
      case ActionKind::B: return tb_;
      case ActionKind::I: return tb_ / 2;
      case ActionKind::W: return tb_ - tb_ / 2;
      default: return 0;
    }
  }
  std::int64_t boundary_bytes(Stage, schedules::Microbatch) const override { return boundary_; }
  std::int64_t activation_bytes(Stage, schedules::Microbatch) const override { return a_; }
  std::int64_t stashed_input_bytes(Stage, schedules::Microbatch) const override { return in_; }
  std::int64_t weight_grad_stash_bytes(Stage, schedules::Microbatch) const override { return w_; }

 private:
  std::int64_t tf_, tb_, a_, in_, boundary_, w_;
};

Schedule make(const char* name, int k, int m,
              schedules::RecomputePolicy recompute = schedules::RecomputePolicy::never) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  o.recompute = recompute;
  return schedules::generate(name, o);
}

// Simulates with the timeline recorded, and checks on the way that the
// engine's running totals give exactly the metrics of the recorded timeline.
timelines::Timeline simulate_timeline(const Schedule& s, const CostModel& costs, const LinkModel& links,
                                      LinkSharing sharing = LinkSharing::fifo) {
  SimOptions options;
  options.link_sharing = sharing;
  SimResult recorded = simulate(s, costs, links, options);
  SimOptions quiet = options;
  quiet.record_timeline = false;
  const SimResult totals = simulate(s, costs, links, quiet);
  EXPECT_EQ(totals.metrics, timelines::compute_metrics(recorded.timeline));
  EXPECT_EQ(recorded.metrics, totals.metrics);
  EXPECT_TRUE(totals.timeline.actions.empty());
  return std::move(recorded.timeline);
}

const timelines::TimedAction& find(const timelines::Timeline& t, const char* text) {
  const Action a = schedules::parse_action(text);
  auto it = std::find_if(t.actions.begin(), t.actions.end(),
                         [&](const timelines::TimedAction& x) { return x.action == a; });
  if (it == t.actions.end()) throw std::runtime_error(std::string("no ") + text);
  return *it;
}

std::int64_t peak(const timelines::Timeline& t, int rank) {
  return timelines::compute_metrics(t).ranks.at(static_cast<std::size_t>(rank)).peak_activation_bytes;
}

TEST(Engine, UniformStagesFreeLinksMatchTheClosedForm) {
  const std::int64_t tf = 1'000, tb = 2'000;
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int k : {1, 2, 3, 4, 8}) {
      for (int m : {1, 2, 3, 4, 7, 16, 32}) {
        const auto t = simulate_timeline(make(name, k, m), UniformCosts(tf, tb), FreeLink());
        const auto metrics = timelines::compute_metrics(t);
        EXPECT_EQ(metrics.step_time_ns, (m + k - 1) * (tf + tb)) << name << " K=" << k << " M=" << m;
        EXPECT_DOUBLE_EQ(metrics.bubble_fraction, double(k - 1) / double(m + k - 1))
            << name << " K=" << k << " M=" << m;
        EXPECT_DOUBLE_EQ(metrics.bubble_fraction, metrics.bubble_fraction_analytic.value());
      }
    }
  }
}

TEST(Engine, RecomputeCostsOneMoreForwardPerRecomputedBackward) {
  // GPipe with `always`: every rank runs M extra forwards, and the drain is
  // stretched by R on the critical path: (M+K-1)(tf+tb) + M*tf.
  const std::int64_t tf = 1'000, tb = 2'000;
  for (int k : {1, 2, 4}) {
    for (int m : {1, 4, 8}) {
      const auto t = simulate_timeline(make("gpipe", k, m, schedules::RecomputePolicy::stage),
                              UniformCosts(tf, tb), FreeLink());
      EXPECT_EQ(timelines::compute_metrics(t).step_time_ns, (m + k - 1) * (tf + tb) + m * tf)
          << "K=" << k << " M=" << m;
    }
  }
}

TEST(Engine, LinkLatencyAndBandwidthByHand) {
  // K=2, M=1: 0F0 [0,10us], message 5us + 1e6 B / 25 GB/s = 45us, 1F0, 1B0,
  // the gradient back (45us), 0B0.
  const auto t = simulate_timeline(make("gpipe", 2, 1), UniformCosts(10'000, 20'000, 0, 0, 1'000'000),
                          UniformLink(5.0, 25.0));
  EXPECT_EQ(find(t, "0F0").end_ns, 10'000);
  EXPECT_EQ(find(t, "0SEND_F0").start_ns, 10'000);
  EXPECT_EQ(find(t, "0SEND_F0").end_ns, 55'000);
  EXPECT_EQ(find(t, "1RECV_F0").end_ns, 55'000);
  EXPECT_EQ(find(t, "1F0").start_ns, 55'000);
  EXPECT_EQ(find(t, "1B0").start_ns, 65'000);
  EXPECT_EQ(find(t, "1SEND_B0").start_ns, 85'000);
  EXPECT_EQ(find(t, "0B0").start_ns, 130'000);
  EXPECT_EQ(timelines::compute_metrics(t).step_time_ns, 150'000);
}

TEST(Engine, EachLinkIsAFifo) {
  // Transfers (25us) outlast forwards (10us): messages queue on the link 0->1.
  const auto t = simulate_timeline(make("gpipe", 2, 3), UniformCosts(10'000, 10'000, 0, 0, 0),
                          UniformLink(25.0, 1.0));
  EXPECT_EQ(find(t, "0SEND_F0").start_ns, 10'000);
  EXPECT_EQ(find(t, "0SEND_F1").start_ns, 35'000);  // waits for message 0, not 20us
  EXPECT_EQ(find(t, "0SEND_F2").start_ns, 60'000);
  EXPECT_EQ(find(t, "1F0").start_ns, 35'000);
  EXPECT_EQ(find(t, "1F1").start_ns, 60'000);
  EXPECT_EQ(find(t, "1F2").start_ns, 85'000);
  // Last stage: B2 right after F2; the gradients go back on the other link.
  EXPECT_EQ(find(t, "1B2").start_ns, 95'000);
  EXPECT_EQ(find(t, "0B2").start_ns, 105'000 + 25'000);
}

TEST(Engine, GpipeKeepsEveryMicrobatchsActivations) {
  const std::int64_t a = 1000;
  for (int k : {1, 2, 4}) {
    for (int m : {1, 3, 8}) {
      const auto t = simulate_timeline(make("gpipe", k, m), UniformCosts(10, 20, a, 100), FreeLink());
      for (int r = 0; r < k; ++r) EXPECT_EQ(peak(t, r), m * a) << "K=" << k << " M=" << m;
    }
  }
}

TEST(Engine, OneFOneBKeepsAtMostKMinusRMicrobatches) {
  const std::int64_t a = 1000;
  for (int k : {1, 2, 4, 6}) {
    for (int m : {1, 2, 3, 8, 16}) {
      const auto t = simulate_timeline(make("1f1b", k, m), UniformCosts(10, 20, a, 100), FreeLink());
      for (int r = 0; r < k; ++r) {
        EXPECT_EQ(peak(t, r), std::min(k - r, m) * a) << "K=" << k << " M=" << m << " r=" << r;
      }
    }
  }
}

TEST(Engine, RecomputeKeepsOnlyBoundaryInputs) {
  // GPipe with recompute: M-1 stashed inputs plus one full set of activations.
  const std::int64_t a = 1000, in = 64;
  for (auto policy : {schedules::RecomputePolicy::stage, schedules::RecomputePolicy::stage_except_last}) {
    for (int k : {1, 2, 4}) {
      for (int m : {1, 3, 8}) {
        const auto t = simulate_timeline(make("gpipe", k, m, policy), UniformCosts(10, 20, a, in), FreeLink());
        for (int r = 0; r < k; ++r) EXPECT_EQ(peak(t, r), (m - 1) * in + a) << "K=" << k << " M=" << m;
      }
    }
  }
}

// One rank, I and W split and W deferred: F0 F1 I0 I1 W0 W1. I frees all
// but what W keeps (W_s), W frees the rest, so the memory after each action
// is 1000, 2000, 1300, 600, 300, 0.
TEST(Engine, SplitBackwardFreesWhatTheWeightGradientDoesNotKeep) {
  Schedule s = make("gpipe", 1, 2);
  using schedules::make_action;
  s.ranks[0] = {make_action(0, ActionKind::F, 0), make_action(0, ActionKind::F, 1),
                make_action(0, ActionKind::I, 0), make_action(0, ActionKind::I, 1),
                make_action(0, ActionKind::W, 0), make_action(0, ActionKind::W, 1)};
  const auto t = simulate_timeline(s, UniformCosts(10, 20, 1000, 0, 0, 300), FreeLink());
  std::vector<std::int64_t> levels;
  for (const auto& sample : t.memory) levels.push_back(sample.activation_bytes);
  EXPECT_EQ(levels, (std::vector<std::int64_t>{1000, 2000, 1300, 600, 300, 0}));
  EXPECT_EQ(peak(t, 0), 2000);
}

TEST(Engine, MemoryReturnsToZeroAndTraceHasEveryAction) {
  const Schedule s = make("1f1b", 4, 6, schedules::RecomputePolicy::stage);
  const auto t = simulate_timeline(s, UniformCosts(10, 20, 500, 50, 8), UniformLink(1.0, 1.0));
  for (int r = 0; r < 4; ++r) {
    std::int64_t last = -1;
    for (const auto& sample : t.memory) {
      if (sample.rank.value == r) last = sample.activation_bytes;
    }
    EXPECT_EQ(last, 0) << "rank " << r;
  }
  EXPECT_EQ(static_cast<int>(t.actions.size()), schedules::lower(s).total_actions());
  EXPECT_EQ(t.info.source, "sim");
  EXPECT_EQ(t.info.num_microbatches, 6);
}

TEST(Engine, RunsSchedulesReadFromFilesAndRejectsInvalidOnes) {
  Schedule s = make("gpipe", 2, 2);
  const auto lowered = simulate_timeline(schedules::lower(s), UniformCosts(10, 20), FreeLink());
  const auto plain = simulate_timeline(s, UniformCosts(10, 20), FreeLink());
  EXPECT_EQ(timelines::compute_metrics(lowered).step_time_ns, timelines::compute_metrics(plain).step_time_ns);
  std::swap(s.ranks[1][0], s.ranks[1][2]);  // 1B1 before 1F0
  EXPECT_THROW((void)simulate_timeline(s, UniformCosts(10, 20), FreeLink()), InputError);
}

// Shared links (SimOptions::link_sharing = shared): the transfers in flight
// on a link split its bandwidth; hand-computed times.

TEST(EngineSharedLinks, FifoIsTheDefault) { EXPECT_EQ(SimOptions{}.link_sharing, LinkSharing::fifo); }

TEST(EngineSharedLinks, TwoEqualTransfersStartingTogetherFinishTogether) {
  // Forwards take no time, so 0F0 and 0F1 both send at 0: 5us latency, then
  // 20'000 B at 1 GB/s = 20us each alone, 40us shared: both arrive at 45us.
  const auto costs = UniformCosts(0, 10'000, 0, 0, 20'000);
  const auto t = simulate_timeline(make("gpipe", 2, 2), costs, UniformLink(5.0, 1.0), LinkSharing::shared);
  EXPECT_EQ(find(t, "0SEND_F0").start_ns, 0);
  EXPECT_EQ(find(t, "0SEND_F0").end_ns, 45'000);
  EXPECT_EQ(find(t, "0SEND_F1").start_ns, 0);
  EXPECT_EQ(find(t, "0SEND_F1").end_ns, 45'000);
  EXPECT_EQ(find(t, "1RECV_F1").end_ns, 45'000);
  EXPECT_EQ(find(t, "1F0").start_ns, 45'000);
  // FIFO: the second waits for the first, 25us then 50us.
  const auto fifo = simulate_timeline(make("gpipe", 2, 2), costs, UniformLink(5.0, 1.0));
  EXPECT_EQ(find(fifo, "0SEND_F0").end_ns, 25'000);
  EXPECT_EQ(find(fifo, "0SEND_F1").start_ns, 25'000);
  EXPECT_EQ(find(fifo, "0SEND_F1").end_ns, 50'000);
}

TEST(EngineSharedLinks, ATransferJoiningHalfway) {
  // 0F0 ends at 10us and its message drains from 15us (20us alone); 0F1's
  // joins at 25us with 10us of the first left: both at half speed, the first
  // arrives at 45us, the second has 10us left alone and arrives at 55us.
  const auto t = simulate_timeline(make("gpipe", 2, 2), UniformCosts(10'000, 10'000, 0, 0, 20'000),
                                   UniformLink(5.0, 1.0), LinkSharing::shared);
  EXPECT_EQ(find(t, "0SEND_F0").start_ns, 10'000);
  EXPECT_EQ(find(t, "0SEND_F0").end_ns, 45'000);
  EXPECT_EQ(find(t, "0SEND_F1").start_ns, 20'000);
  EXPECT_EQ(find(t, "0SEND_F1").end_ns, 55'000);
  EXPECT_EQ(find(t, "1F0").start_ns, 45'000);
  EXPECT_EQ(find(t, "1F1").start_ns, 55'000);
  // The gradients back, likewise: 1B1 [65, 75] drains from 80; 1B0 [75, 85]
  // joins at 90 with 10us of the first left: 110us and 120us.
  EXPECT_EQ(find(t, "1B1").start_ns, 65'000);
  EXPECT_EQ(find(t, "1SEND_B1").end_ns, 110'000);
  EXPECT_EQ(find(t, "1SEND_B0").end_ns, 120'000);
  EXPECT_EQ(find(t, "0B1").start_ns, 110'000);
  EXPECT_EQ(find(t, "0B0").start_ns, 120'000);
  EXPECT_EQ(timelines::compute_metrics(t).step_time_ns, 130'000);  // 0B0 [120, 130]
}

TEST(EngineSharedLinks, LatencyIsNotShared) {
  // EachLinkIsAFifo's case: 25us of latency and no bytes. Shared, the
  // messages overlap instead of queueing: each arrives 25us after its send.
  const auto t = simulate_timeline(make("gpipe", 2, 3), UniformCosts(10'000, 10'000, 0, 0, 0),
                                   UniformLink(25.0, 1.0), LinkSharing::shared);
  EXPECT_EQ(find(t, "0SEND_F1").start_ns, 20'000);
  EXPECT_EQ(find(t, "1F0").start_ns, 35'000);
  EXPECT_EQ(find(t, "1F1").start_ns, 45'000);
  EXPECT_EQ(find(t, "1F2").start_ns, 55'000);
}

// The timeline in one canonical order, to compare runs whose recording order differs.
std::vector<timelines::TimedAction> sorted_actions(timelines::Timeline t) {
  std::sort(t.actions.begin(), t.actions.end(), [](const auto& a, const auto& b) {
    return std::tie(a.rank, a.stream, a.start_ns, a.action) < std::tie(b.rank, b.stream, b.start_ns, b.action);
  });
  return t.actions;
}

TEST(EngineSharedLinks, OneTransferAtATimeIsExactlyFifo) {
  // Transfers (1us + 8 B) shorter than any forward or backward never overlap
  // on a link, so sharing changes nothing, to the ns.
  for (const char* name : {"gpipe", "1f1b"}) {
    for (auto policy : {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage}) {
      const Schedule s = make(name, 4, 6, policy);
      const UniformCosts costs(10'000, 20'000, 500, 50, 8'000);
      const UniformLink link(1.0, 1.0);
      const auto fifo = simulate_timeline(s, costs, link);
      const auto shared = simulate_timeline(s, costs, link, LinkSharing::shared);
      EXPECT_EQ(sorted_actions(shared), sorted_actions(fifo)) << name;
      EXPECT_EQ(timelines::compute_metrics(shared), timelines::compute_metrics(fifo)) << name;
    }
  }
  // K=2, M=1 by hand, as LinkLatencyAndBandwidthByHand.
  const auto t = simulate_timeline(make("gpipe", 2, 1), UniformCosts(10'000, 20'000, 0, 0, 1'000'000),
                                   UniformLink(5.0, 25.0), LinkSharing::shared);
  EXPECT_EQ(find(t, "0SEND_F0").end_ns, 55'000);
  EXPECT_EQ(find(t, "0B0").start_ns, 130'000);
  EXPECT_EQ(timelines::compute_metrics(t).step_time_ns, 150'000);
}

TEST(EngineSharedLinks, UniformStagesFreeLinksMatchTheClosedForm) {
  const std::int64_t tf = 1'000, tb = 2'000;
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int k : {1, 2, 3, 4, 8}) {
      for (int m : {1, 2, 3, 4, 7, 16, 32}) {
        const auto t = simulate_timeline(make(name, k, m), UniformCosts(tf, tb), FreeLink(), LinkSharing::shared);
        const auto metrics = timelines::compute_metrics(t);
        EXPECT_EQ(metrics.step_time_ns, (m + k - 1) * (tf + tb)) << name << " K=" << k << " M=" << m;
        EXPECT_DOUBLE_EQ(metrics.bubble_fraction, double(k - 1) / double(m + k - 1));
      }
    }
  }
}

TEST(EngineSharedLinks, SharingNeverBeatsTheWorkOnALink) {
  // Slow links, everything queued: shared or FIFO, a link is busy for the
  // same total work, so the last message cannot arrive earlier shared; and
  // the memory rules do not depend on the links.
  const Schedule s = make("gpipe", 3, 8);
  const UniformCosts costs(1'000, 2'000, 100, 10, 50'000);
  const UniformLink link(0.0, 1.0);  // 50us per message, forwards take 1us
  const auto fifo = timelines::compute_metrics(simulate_timeline(s, costs, link));
  const auto shared = timelines::compute_metrics(simulate_timeline(s, costs, link, LinkSharing::shared));
  EXPECT_GE(shared.step_time_ns, fifo.step_time_ns);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(shared.ranks[static_cast<std::size_t>(r)].peak_activation_bytes,
              fifo.ranks[static_cast<std::size_t>(r)].peak_activation_bytes);
  }
}

TEST(EngineSharedLinks, AnUnvalidatedDeadlockStallsNamingTheWaitingAction) {
  // 1B1 moved before 1F0: rank 1 waits for its own later F, rank 0 for 1B1.
  Schedule s = make("gpipe", 2, 2);
  std::swap(s.ranks[1][0], s.ranks[1][2]);
  SimOptions options;
  options.validate = false;
  for (auto sharing : {LinkSharing::fifo, LinkSharing::shared}) {
    options.link_sharing = sharing;
    try {
      (void)simulate(s, UniformCosts(10, 20), UniformLink(1.0, 1.0), options);
      ADD_FAILURE() << "no stall";
    } catch (const RunError& e) {
      EXPECT_STREQ(e.what(), "simulation stalled: rank 0 waits at 0B1");
    }
  }
}

TEST(EngineSharedLinks, NamesParseBothWays) {
  EXPECT_EQ(parse_link_sharing("fifo"), LinkSharing::fifo);
  EXPECT_EQ(parse_link_sharing("shared"), LinkSharing::shared);
  EXPECT_EQ(parse_link_sharing("fair"), std::nullopt);
  EXPECT_EQ(to_string(LinkSharing::shared), "shared");
  EXPECT_EQ(to_string(LinkSharing::fifo), "fifo");
}

}  // namespace
}  // namespace gpipe::sim
