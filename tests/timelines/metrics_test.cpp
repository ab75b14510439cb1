// Metrics of hand-built timelines, with exact values: the uniform GPipe
// fill/drain timeline must give the closed forms (K-1)/(M+K-1) and (K-1)/M.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::timelines {
namespace {

using nlohmann::json;

TimedAction timed_action(int rank, schedules::Action a, std::int64_t start, std::int64_t end) {
  return TimedAction{a, schedules::Rank{rank}, stream_of(a.kind), start, end};
}

// GPipe, K uniform stages, M micro-batches, no comm: rank r runs F(m) at
// [(r+m)tf, (r+m+1)tf); after the last forward ends at T = (M+K-1)tf, rank r runs
// its j-th backward (B of M-1-j) at T + (K-1-r+j)tb, the mirror image.
Timeline uniform_gpipe(int k, int m, std::int64_t tf, std::int64_t tb) {
  Timeline tl;
  tl.info = info_of(schedules::generate_gpipe({.num_ranks = k, .num_microbatches = m}));
  const std::int64_t drain = (m + k - 1) * tf;
  for (int r = 0; r < k; ++r) {
    for (int j = 0; j < m; ++j) {
      tl.actions.push_back(
          timed_action(r, schedules::make_action(r, schedules::ActionKind::F, j), (r + j) * tf, (r + j + 1) * tf));
    }
    for (int j = 0; j < m; ++j) {
      const std::int64_t start = drain + (k - 1 - r + j) * tb;
      tl.actions.push_back(timed_action(r, schedules::make_action(r, schedules::ActionKind::B, m - 1 - j), start, start + tb));
    }
  }
  return tl;
}

std::string metrics_error(const Timeline& tl) {
  try {
    (void)compute_metrics(tl);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Metrics, UniformGpipeMatchesTheClosedForms) {
  struct Case {
    int k, m;
    std::int64_t tf, tb;
  };
  for (const Case c :
       {Case{1, 1, 5, 9}, Case{2, 1, 1000, 2000}, Case{4, 4, 812'000, 1'650'000}, Case{4, 8, 3, 7},
        Case{8, 32, 1'234'567, 2'345'679}, Case{3, 5, 1'000'003, 999'983}, Case{16, 64, 99, 101}}) {
    SCOPED_TRACE(::testing::Message() << "K=" << c.k << " M=" << c.m);
    const Metrics m = compute_metrics(uniform_gpipe(c.k, c.m, c.tf, c.tb));
    const std::int64_t step = (c.m + c.k - 1) * (c.tf + c.tb);
    EXPECT_EQ(m.step_time_ns, step);
    EXPECT_DOUBLE_EQ(m.step_time_us, static_cast<double>(step) / 1000.0);
    const double analytic = static_cast<double>(c.k - 1) / (c.m + c.k - 1);
    EXPECT_DOUBLE_EQ(m.bubble_fraction, analytic);
    EXPECT_DOUBLE_EQ(m.bubble_fraction_analytic.value(), analytic);
    const double megatron = static_cast<double>(c.k - 1) / c.m;
    EXPECT_DOUBLE_EQ(m.bubble_time_over_ideal, megatron);
    EXPECT_DOUBLE_EQ(m.bubble_time_over_ideal_analytic.value(), megatron);
    ASSERT_EQ(m.ranks.size(), static_cast<std::size_t>(c.k));
    for (int r = 0; r < c.k; ++r) {
      EXPECT_EQ(m.ranks[r].rank, r);
      EXPECT_EQ(m.ranks[r].busy_ns, c.m * (c.tf + c.tb));
      EXPECT_DOUBLE_EQ(m.ranks[r].utilization, static_cast<double>(c.m) / (c.m + c.k - 1));
    }
  }
}

TEST(Metrics, CommDoesNotCountAsBusy) {
  Timeline tl = uniform_gpipe(2, 2, 100, 200);
  const Metrics before = compute_metrics(tl);
  // Transfers inside the step, on the send and recv streams.
  tl.actions.push_back(timed_action(0, schedules::make_action(0, schedules::ActionKind::SEND_F, 0), 100, 150));
  tl.actions.push_back(timed_action(1, schedules::make_action(1, schedules::ActionKind::RECV_F, 0), 100, 150));
  tl.actions.push_back(timed_action(1, schedules::make_action(1, schedules::ActionKind::SEND_B, 1), 700, 790));
  tl.actions.push_back(timed_action(0, schedules::make_action(0, schedules::ActionKind::RECV_B, 1), 700, 790));
  const Metrics after = compute_metrics(tl);
  EXPECT_EQ(after, before);
  EXPECT_EQ(after.ranks[0].busy_ns, 600);
  EXPECT_DOUBLE_EQ(after.ranks[0].busy_us, 0.6);
}

TEST(Metrics, MeasuredTimelinesNeedNotStartAtZero) {
  Timeline tl;
  tl.info =
      TimelineInfo{"gpipe", 2, 2, 1, schedules::RecomputePolicy::never, {schedules::Rank{0}, schedules::Rank{1}}, "cpu", "", 0, {}};
  const std::int64_t t0 = 1'700'000'000'000'000'000;  // an epoch timestamp
  tl.actions = {timed_action(0, schedules::make_action(0, schedules::ActionKind::F, 0), t0, t0 + 300),
                timed_action(0, schedules::make_action(0, schedules::ActionKind::SEND_F, 0), t0 + 300, t0 + 400),
                timed_action(1, schedules::make_action(1, schedules::ActionKind::F, 0), t0 + 400, t0 + 700),
                timed_action(1, schedules::make_action(1, schedules::ActionKind::B, 0), t0 + 700, t0 + 1'300),
                timed_action(1, schedules::make_action(1, schedules::ActionKind::STEP), t0 + 1'300, t0 + 1'350),
                timed_action(0, schedules::make_action(0, schedules::ActionKind::B, 0), t0 + 1'400, t0 + 2'000)};
  const Metrics m = compute_metrics(tl);
  EXPECT_EQ(m.step_time_ns, 2'000);
  EXPECT_EQ(m.ranks[0].busy_ns, 900);
  EXPECT_EQ(m.ranks[1].busy_ns, 950);  // STEP is compute
  EXPECT_DOUBLE_EQ(m.ranks[1].utilization, 0.475);
  EXPECT_DOUBLE_EQ(m.bubble_fraction, 1.0 - 1850.0 / 4000.0);
  EXPECT_DOUBLE_EQ(m.bubble_time_over_ideal, 2150.0 / 1850.0);
  EXPECT_DOUBLE_EQ(m.bubble_fraction_analytic.value(), 0.5);
  EXPECT_DOUBLE_EQ(m.bubble_time_over_ideal_analytic.value(), 1.0);
}

TEST(Metrics, PeakActivationMemoryAndStaticBytes) {
  Timeline tl = uniform_gpipe(3, 2, 10, 20);
  tl.info.static_bytes = {1'000, 2'000, 3'000};
  tl.memory = {{schedules::Rank{0}, 0, 500}, {schedules::Rank{0}, 10, 1'000}, {schedules::Rank{0}, 60, 400},
               {schedules::Rank{0}, 100, 0}, {schedules::Rank{2}, 20, 7},     {schedules::Rank{2}, 30, 5'000'000'000}};
  const Metrics m = compute_metrics(tl);
  EXPECT_EQ(m.ranks[0].peak_activation_bytes, 1'000);
  EXPECT_EQ(m.ranks[1].peak_activation_bytes, 0);  // no samples
  EXPECT_EQ(m.ranks[2].peak_activation_bytes, 5'000'000'000);
  EXPECT_EQ(m.ranks[0].static_bytes, 1'000);
  EXPECT_EQ(m.ranks[2].static_bytes, 3'000);
  tl.info.static_bytes.clear();
  EXPECT_EQ(compute_metrics(tl).ranks[2].static_bytes, 0);
}

TEST(Metrics, ThroughputFromBatchSize) {
  Timeline tl = uniform_gpipe(2, 4, 200'000, 300'000);           // step = 5 x 0.5 ms = 2.5 ms
  EXPECT_EQ(compute_metrics(tl).throughput_samples_per_s, 0.0);  // batch size unknown
  tl.info.batch_size = 64;
  EXPECT_EQ(compute_metrics(tl).step_time_ns, 2'500'000);
  EXPECT_DOUBLE_EQ(compute_metrics(tl).throughput_samples_per_s, 25'600.0);
}

TEST(Metrics, EmptyTimelineIsAllZeros) {
  Timeline tl;
  tl.info.num_ranks = 2;
  const Metrics m = compute_metrics(tl);
  EXPECT_EQ(m.step_time_ns, 0);
  EXPECT_EQ(m.bubble_fraction, 0.0);
  EXPECT_EQ(m.bubble_time_over_ideal, 0.0);
  EXPECT_EQ(m.throughput_samples_per_s, 0.0);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[1].utilization, 0.0);
}

TEST(Metrics, RejectsRanksOutsideTheTimeline) {
  Timeline tl = uniform_gpipe(2, 1, 10, 10);
  tl.actions.push_back(timed_action(2, schedules::make_action(2, schedules::ActionKind::F, 0), 0, 5));
  EXPECT_NE(metrics_error(tl).find("action 2F0 is on rank 2, outside the timeline's 2 ranks"),
            std::string::npos)
      << metrics_error(tl);
  tl = uniform_gpipe(2, 1, 10, 10);
  tl.memory.push_back({schedules::Rank{-1}, 3, 4});
  EXPECT_NE(metrics_error(tl).find("memory sample at 3 ns is on rank -1"), std::string::npos)
      << metrics_error(tl);
  tl = uniform_gpipe(2, 1, 10, 10);
  tl.info.static_bytes = {1, 2, 3};
  EXPECT_NE(metrics_error(tl).find("static_bytes has 3 entries for 2 ranks"), std::string::npos)
      << metrics_error(tl);
}

TEST(MetricsJson, HasTheDesignKeys) {
  Timeline tl = uniform_gpipe(4, 8, 1'000, 2'000);
  tl.info.batch_size = 32;
  tl.info.static_bytes = {1, 2, 3, 4};
  tl.memory = {{schedules::Rank{3}, 5, 123}};
  const json j = to_json(compute_metrics(tl));
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"bubble_fraction", "bubble_fraction_analytic",
                                      "bubble_time_over_ideal", "bubble_time_over_ideal_analytic",
                                      "ranks", "step_time_us", "throughput_samples_per_s"}));
  EXPECT_EQ(j.at("step_time_us"), 33.0);
  EXPECT_EQ(j.at("bubble_fraction_analytic"), 3.0 / 11.0);
  EXPECT_EQ(j.at("bubble_time_over_ideal_analytic"), 3.0 / 8.0);
  ASSERT_EQ(j.at("ranks").size(), 4u);
  EXPECT_EQ(j.at("ranks")[3], json({{"rank", 3},
                                    {"busy_us", 24.0},
                                    {"utilization", 8.0 / 11.0},
                                    {"peak_activation_bytes", 123},
                                    {"static_bytes", 4}}));
}

TEST(MetricsJson, RoundTrips) {
  Timeline tl = uniform_gpipe(3, 7, 1'234'567, 2'345'671);
  tl.info.batch_size = 56;
  tl.memory = {{schedules::Rank{1}, 5, 987'654'321'012}};
  const Metrics m = compute_metrics(tl);
  EXPECT_EQ(metrics_from_json(json::parse(to_json(m).dump())), m);
}

TEST(MetricsJson, BadFieldsAreNamed) {
  const json good = to_json(compute_metrics(uniform_gpipe(2, 2, 10, 20)));
  auto error = [](const json& j) -> std::string {
    try {
      (void)metrics_from_json(j);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  json bad = good;
  bad.erase("bubble_fraction");
  EXPECT_EQ(error(bad), "metrics: field 'bubble_fraction' is missing");
  bad = good;
  bad["step_time_us"] = "fast";
  EXPECT_EQ(error(bad), "metrics: field 'step_time_us' must be a number");
  bad = good;
  bad["ranks"] = 3;
  EXPECT_EQ(error(bad), "metrics: field 'ranks' must be an array");
  bad = good;
  bad["ranks"][1]["peak_activation_bytes"] = 1.5;
  EXPECT_EQ(error(bad), "metrics: field 'ranks[1].peak_activation_bytes' must be an integer");
  bad = good;
  bad["ranks"][0].erase("busy_us");
  EXPECT_EQ(error(bad), "metrics: field 'ranks[0].busy_us' is missing");
  bad = good;
  bad["ranks"][1]["rank"] = -1;
  EXPECT_EQ(error(bad), "metrics: field 'ranks[1].rank' is out of range");
  EXPECT_EQ(error(json::array()), "metrics: must be a JSON object");
}

}  // namespace
}  // namespace gpipe::timelines
