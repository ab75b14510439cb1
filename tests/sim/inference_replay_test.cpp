// The inference replay (sim/inference/replay.hpp): the closed forms of equal
// stages on free links hold exactly (a batch of B items in (B+K-1) t, the
// steady state at min(B, K)/(K t), the first item after K t); an independent
// event-driven list scheduler written here agrees with it to the ns on
// unequal stages with links, in the closed and the open loop; memory per rank
// follows the stated rules, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "sim/inference/replay.hpp"
#include "timelines/serving_metrics.hpp"

namespace gpipe::sim::inference {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Stage;

// Stage s's forward takes fwd[s] + item % 3 ns (so items differ too), and
// hands on out[s] bytes.
class Stages final : public CostModel {
 public:
  Stages(std::vector<std::int64_t> fwd, std::vector<std::int64_t> out, bool vary = false)
      : fwd_(std::move(fwd)), out_(std::move(out)), vary_(vary) {}
  std::int64_t duration_ns(const Action& a) const override {
    return fwd_.at(a.stage.at()) + (vary_ ? a.microbatch.value % 3 : 0);
  }
  std::int64_t boundary_bytes(Stage s, Microbatch) const override { return out_.at(s.at()); }
  std::int64_t activation_bytes(Stage, Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(Stage, Microbatch) const override { return 0; }

 private:
  std::vector<std::int64_t> fwd_, out_;
  bool vary_;
};

Stages equal(int k, std::int64_t t) { return {std::vector<std::int64_t>(k, t), std::vector<std::int64_t>(k, 0)}; }

Workload closed(int r, int b) { return {.requests = r, .in_flight = b}; }

TEST(InferenceClosedForms, ABatchOfBItemsTakesBPlusKMinus1StageTimes) {
  constexpr std::int64_t t = 1000;
  for (int k = 1; k <= 6; ++k) {
    for (int b = 1; b <= 9; ++b) {
      const ServingRun run = replay(equal(k, t), FreeLink{}, k, closed(b, b), {}, false);
      const timelines::ServingMetrics m = timelines::compute_serving_metrics(run, b, 1, {});
      EXPECT_EQ(m.step_time_ns, (b + k - 1) * t) << fmt::format("K={} B={}", k, b);
      EXPECT_DOUBLE_EQ(m.step_time_us, m.closed_form.batch_time_us) << fmt::format("K={} B={}", k, b);
      EXPECT_EQ(run.items.front().latency_ns(), k * t);
      EXPECT_DOUBLE_EQ(m.latency.first_us, m.closed_form.first_latency_us);
    }
  }
}

TEST(InferenceClosedForms, TheSteadyStateServesMinBKOverKStageTimes) {
  constexpr std::int64_t t = 700;
  for (int k = 1; k <= 6; ++k) {
    for (int b = 1; b <= 8; ++b) {
      const int r = 5 * b;  // a multiple of B, more than 2B
      const timelines::ServingMetrics m = timelines::compute_serving_metrics(replay(equal(k, t), FreeLink{}, k, closed(r, b), {}, false), b, 1, {});
      ASSERT_TRUE(m.steady_throughput_items_per_s.has_value());
      const double expected = std::min(b, k) * 1e9 / static_cast<double>(k * t);
      EXPECT_NEAR(*m.steady_throughput_items_per_s, expected, 1e-9 * expected) << fmt::format("K={} B={}", k, b);
      EXPECT_NEAR(m.closed_form.steady_throughput_items_per_s, expected, 1e-9 * expected);
      // The first window's last item waits for the B - 1 before it at stage 0:
      // the batch time. After it, Little's law: B in the pipeline at
      // min(B, K) / (K t) items per unit time spend max(B, K) t each.
      EXPECT_DOUBLE_EQ(m.latency.max_us, (b + k - 1) * t / 1e3) << fmt::format("K={} B={}", k, b);
      const ServingRun run = replay(equal(k, t), FreeLink{}, k, closed(r, b), {}, false);
      for (std::size_t i = static_cast<std::size_t>(b); i < run.items.size(); ++i) {
        EXPECT_EQ(run.items[i].latency_ns(), std::max(b, k) * t) << fmt::format("K={} B={} item {}", k, b, i);
      }
    }
  }
}

TEST(InferenceClosedForms, NoSteadyStateWithinTwoWindows) {
  const timelines::ServingMetrics m = timelines::compute_serving_metrics(replay(equal(2, 10), FreeLink{}, 2, closed(8, 4), {}, false), 4, 1, {});
  EXPECT_FALSE(m.steady_throughput_items_per_s.has_value());
}

// --- an independent model: event-driven list scheduling ---------------------
// Resources: each stage's compute and each link s -> s+1, serving one task at
// a time; a task becomes ready when its inputs are done (and, for F(0, r), the
// item is admitted); at every event each idle resource starts its ready task
// of the lowest item. Nothing here follows the replay's recurrence.
struct ListResult {
  std::vector<std::int64_t> completed, admitted;
};

ListResult list_schedule(const CostModel& costs, const LinkModel& link, int k, const Workload& w,
                         const std::vector<std::int64_t>& arrivals) {
  const int r_count = w.requests;
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  // ready[s][r]: when F(s, r)'s input is there; msg_ready[s][r]: when message s->s+1 of r may go.
  std::vector<std::vector<std::int64_t>> ready(k, std::vector<std::int64_t>(r_count, kNever));
  std::vector<std::vector<std::int64_t>> msg_ready(k, std::vector<std::int64_t>(r_count, kNever));
  std::vector<std::vector<bool>> done_f(k, std::vector<bool>(r_count, false)), done_m = done_f;
  std::vector<std::int64_t> compute_busy_until(k, 0), link_busy_until(k, 0);
  ListResult out{std::vector<std::int64_t>(r_count, kNever), std::vector<std::int64_t>(r_count, kNever)};
  int completed = 0;
  std::int64_t now = 0;
  const auto admit = [&](int r, std::int64_t at) {
    out.admitted[r] = at;
    ready[0][r] = at;
  };
  for (int r = 0; r < std::min(w.in_flight, r_count); ++r) admit(r, arrivals[r]);
  while (completed < r_count) {
    // At this instant: admit what completions allow and start what is ready,
    // until nothing more happens.
    for (bool changed = true; changed;) {
      changed = false;
      completed = 0;
      for (int r = 0; r < r_count; ++r) {
        if (out.completed[r] > now) continue;
        ++completed;
        const int next = r + w.in_flight;
        if (next < r_count && out.admitted[next] == kNever) {
          admit(next, std::max(out.completed[r], arrivals[next]));
          changed = true;
        }
      }
      for (int s = 0; s < k; ++s) {
        if (compute_busy_until[s] <= now) {
          for (int r = 0; r < r_count; ++r) {
            if (done_f[s][r] || ready[s][r] > now) continue;
            const std::int64_t end = now + costs.duration_ns({Stage{s}, ActionKind::F, Microbatch{r}});
            compute_busy_until[s] = end;
            done_f[s][r] = true;
            (s + 1 < k ? msg_ready[s][r] : out.completed[r]) = end;
            changed = true;
            break;
          }
        }
        if (s + 1 < k && link_busy_until[s] <= now) {
          for (int r = 0; r < r_count; ++r) {
            if (done_m[s][r] || msg_ready[s][r] > now) continue;
            const std::int64_t end = now + link.transfer_ns(schedules::Rank{s}, schedules::Rank{s + 1},
                                                            costs.boundary_bytes(Stage{s}, Microbatch{r}));
            link_busy_until[s] = end;
            done_m[s][r] = true;
            ready[s + 1][r] = end;
            changed = true;
            break;
          }
        }
      }
    }
    if (completed == r_count) break;
    // The next event: the earliest future end, readiness or admission.
    std::int64_t next = kNever;
    for (int s = 0; s < k; ++s) {
      if (compute_busy_until[s] > now) next = std::min(next, compute_busy_until[s]);
      if (link_busy_until[s] > now) next = std::min(next, link_busy_until[s]);
      for (int r = 0; r < r_count; ++r) {
        if (!done_f[s][r] && ready[s][r] > now && ready[s][r] != kNever) next = std::min(next, ready[s][r]);
        if (!done_m[s][r] && msg_ready[s][r] > now && msg_ready[s][r] != kNever) next = std::min(next, msg_ready[s][r]);
      }
    }
    if (next == kNever) break;
    now = next;
  }
  return out;
}

void expect_models_agree(const Workload& w, const std::string& what) {
  const Stages costs({900, 1700, 400, 1200}, {3000, 5000, 1000, 0}, true);
  const UniformLink link(0.25, 2.0);  // 250 ns + 0.5 ns per byte
  const ServingRun run = replay(costs, link, 4, w, {}, false);
  const ListResult list = list_schedule(costs, link, 4, w, arrival_times_ns(w));
  for (int r = 0; r < w.requests; ++r) {
    const ItemTimes& item = run.items[static_cast<std::size_t>(r)];
    EXPECT_EQ(item.completed_ns, list.completed[static_cast<std::size_t>(r)]) << what << " item " << r;
    EXPECT_EQ(item.admitted_ns, list.admitted[static_cast<std::size_t>(r)]) << what << " item " << r;
  }
}

TEST(InferenceListModel, AgreesOnUnequalStagesWithLinksInTheClosedLoop) {
  for (int b = 1; b <= 6; ++b) expect_models_agree(closed(23, b), fmt::format("closed B={}", b));
}

TEST(InferenceListModel, AgreesInTheOpenLoop) {
  for (int b : {1, 2, 5}) {
    for (double interval : {0.0, 0.5, 1.3, 2.5}) {
      Workload w = closed(23, b);
      w.arrival_interval_us = interval;
      expect_models_agree(w, fmt::format("interval {} B={}", interval, b));
    }
    Workload poisson = closed(40, b);
    poisson.arrival_rate_per_s = 8e5;
    poisson.seed = 11;
    expect_models_agree(poisson, fmt::format("poisson B={}", b));
  }
}

TEST(InferenceOpenLoop, LatencyIncludesTheWaitForAPlace) {
  // One stage of 1000 ns, one in flight, items every 100 ns: item r arrives at
  // 100 r and leaves at 1000 (r + 1), so it waits 900 r ns.
  Workload w = closed(10, 1);
  w.arrival_interval_us = 0.1;
  const ServingRun run = replay(equal(1, 1000), FreeLink{}, 1, w, {}, false);
  for (int r = 0; r < 10; ++r) {
    const ItemTimes& item = run.items[static_cast<std::size_t>(r)];
    EXPECT_EQ(item.arrival_ns, 100 * r);
    EXPECT_EQ(item.admitted_ns, 1000 * r);
    EXPECT_EQ(item.latency_ns(), 1000 * (r + 1) - 100 * r);
  }
  // Arrivals slower than the pipeline: nobody waits.
  w.arrival_interval_us = 2.0;
  const ServingRun slow = replay(equal(3, 500), FreeLink{}, 3, w, {}, false);
  for (const ItemTimes& item : slow.items) EXPECT_EQ(item.latency_ns(), 1500);
}

TEST(InferenceMemory, InputsUntilTheirForwardEndsOutputsUntilTheLinkTakesThem) {
  // Stage 0: 100 ns, output 10 bytes over a link of 1000 ns + 0 per byte;
  // stage 1: 50 ns, output 7 bytes (kept during its forward only).
  const Stages costs({100, 50}, {10, 7});
  const UniformLink link(1.0, 1e9);
  // One item: stage 0 holds 10 bytes from 0 until the link takes them at 100;
  // stage 1 holds the 10 arrived at 1100 and its own 7 during [1100, 1150).
  const ServingRun one = replay(costs, link, 2, closed(1, 1), {}, true);
  EXPECT_EQ(one.peak_bytes, (std::vector<std::int64_t>{10, 17}));
  // Three at once: stage 0 makes outputs at 0, 100 and 200, which the FIFO
  // link takes at 100, 1100 and 2100: at 200 it holds the second and the
  // third, 20 bytes. Stage 1 gets them one at a time: still 17.
  const ServingRun three = replay(costs, link, 2, closed(3, 3), {}, true);
  EXPECT_EQ(three.peak_bytes, (std::vector<std::int64_t>{20, 17}));
  // The recorded samples end at the state (0) on both ranks.
  for (int rank : {0, 1}) {
    std::int64_t last = -1;
    for (const auto& sample : three.timeline.memory) {
      if (sample.rank.value == rank) last = sample.activation_bytes;
    }
    EXPECT_EQ(last, 0) << "rank " << rank;
  }
}

TEST(InferenceMemory, StateCountsForEveryStreamFromTheStart) {
  const Stages costs({100, 100}, {10, 10});
  const std::vector<std::int64_t> state{1000, 3};
  const ServingRun run = replay(costs, FreeLink{}, 2, closed(5, 2), state, false);
  EXPECT_EQ(run.state_bytes, (std::vector<std::int64_t>{2000, 6}));
  // Free link: stage 0's output leaves as its forward ends; stage 1 holds the
  // input and its output during its forward.
  EXPECT_EQ(run.peak_bytes, (std::vector<std::int64_t>{2000 + 10, 6 + 20}));
  // Fewer items than B: only as many streams as items.
  EXPECT_EQ(replay(costs, FreeLink{}, 2, closed(1, 4), state, false).state_bytes,
            (std::vector<std::int64_t>{1000, 3}));
}

TEST(InferenceMetrics, BottleneckIsTheBusiestStage) {
  const Stages costs({100, 300, 200}, {0, 0, 0});
  const std::vector<std::int64_t> weights{5, 6, 7};
  const timelines::ServingMetrics m = timelines::compute_serving_metrics(replay(costs, FreeLink{}, 3, closed(30, 3), {}, false), 3, 2, weights);
  EXPECT_EQ(m.bottleneck_stage, 1);
  EXPECT_DOUBLE_EQ(m.ranks[1].forward_us, 0.3);
  EXPECT_DOUBLE_EQ(m.closed_form.stage_time_us, 0.3);
  EXPECT_EQ(m.ranks[2].static_bytes, 7);
  EXPECT_DOUBLE_EQ(m.throughput_samples_per_s, 2 * m.throughput_items_per_s);
  // The steady state runs at the slowest stage's pace.
  ASSERT_TRUE(m.steady_throughput_items_per_s.has_value());
  EXPECT_NEAR(*m.steady_throughput_items_per_s, 1e9 / 300.0, 1e-6);
}

TEST(InferenceMetrics, LatencyPercentilesAreNearestRank) {
  // One stage, one in flight, items every 100 ns against 1000 ns of work:
  // latencies 1000 + 900 r ns, r = 0..99.
  Workload w = closed(100, 1);
  w.arrival_interval_us = 0.1;
  const timelines::ServingMetrics m = timelines::compute_serving_metrics(replay(equal(1, 1000), FreeLink{}, 1, w, {}, false), 1, 1, {});
  EXPECT_DOUBLE_EQ(m.latency.first_us, 1.0);
  EXPECT_DOUBLE_EQ(m.latency.p50_us, (1000 + 900 * 49) / 1e3);
  EXPECT_DOUBLE_EQ(m.latency.p90_us, (1000 + 900 * 89) / 1e3);
  EXPECT_DOUBLE_EQ(m.latency.p99_us, (1000 + 900 * 98) / 1e3);
  EXPECT_DOUBLE_EQ(m.latency.max_us, (1000 + 900 * 99) / 1e3);
}

}  // namespace
}  // namespace gpipe::sim::inference
