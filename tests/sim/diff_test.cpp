// diff_timelines on hand-built GPipe K=2, M=2 timelines, with exact values:
// identical traces give zeros, a measurement 10 % slower everywhere gives
// -100/11 %, and unmatched actions, per-kind sums, the worst-first order and
// every error path are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "sim/diff.hpp"
#include "timelines/chrome_trace.hpp"

namespace gpipe::sim {
namespace {

// Each name, not `using namespace`: in a unity build a using-directive would
// reach the module's later files too.
using schedules::Action;
using schedules::ActionKind;
using schedules::generate_gpipe;
using timelines::info_of;
using schedules::parse_action;
using schedules::Rank;
using timelines::read_chrome_trace;
using schedules::RecomputePolicy;
using timelines::stream_of;
using timelines::TimedAction;
using timelines::Timeline;
using timelines::TimelineInfo;
using nlohmann::json;

constexpr std::int64_t kUs = 1000;

TimedAction timed(int rank, std::string_view text, std::int64_t start_us, std::int64_t end_us) {
  const Action a = parse_action(text);
  return {a, Rank{rank}, stream_of(a.kind), start_us * kUs, end_us * kUs};
}

TimelineInfo gpipe_info(int k, int m) {
  return info_of(generate_gpipe({.num_ranks = k, .num_microbatches = m}));
}

// GPipe fill/drain, K=2, M=2, F 100 us, B 200 us, no comm: step 900 us, bubble 1/3.
Timeline gpipe_2x2() {
  Timeline tl;
  tl.info = gpipe_info(2, 2);
  tl.actions = {timed(0, "0F0", 0, 100),   timed(0, "0F1", 100, 200), timed(1, "1F0", 100, 200),
                timed(1, "1F1", 200, 300), timed(1, "1B1", 300, 500), timed(1, "1B0", 500, 700),
                timed(0, "0B1", 500, 700), timed(0, "0B0", 700, 900)};
  tl.memory = {{Rank{0}, 0, 1000}, {Rank{1}, 100 * kUs, 2000}};
  return tl;
}

// Every time t becomes t * 11 / 10 + offset: a run 10 % slower that starts later.
Timeline slower_by_10_percent(Timeline tl, std::int64_t offset_ns) {
  for (auto& a : tl.actions) {
    a.start_ns = a.start_ns * 11 / 10 + offset_ns;
    a.end_ns = a.end_ns * 11 / 10 + offset_ns;
  }
  for (auto& s : tl.memory) s.time_ns = s.time_ns * 11 / 10 + offset_ns;
  tl.info.source = "cpu";
  tl.info.device = "Test CPU";
  return tl;
}

std::string diff_error(const Timeline& predicted, const Timeline& measured, int worst = 10) {
  try {
    (void)diff_timelines(predicted, measured, worst);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> worst_texts(const TimelineDiff& d) {
  std::vector<std::string> out;
  for (const auto& w : d.worst) out.push_back(to_string(w.action) + "@" + std::to_string(w.rank.value));
  return out;
}

TEST(DiffTimelines, IdenticalTracesGiveZeroErrors) {
  const Timeline tl = gpipe_2x2();
  const TimelineDiff d = diff_timelines(tl, tl);
  EXPECT_EQ(d.matched, 8);
  EXPECT_TRUE(d.only_in_predicted.empty());
  EXPECT_TRUE(d.only_in_measured.empty());
  EXPECT_EQ(d.predicted_step_us, 900.0);
  EXPECT_EQ(d.measured_step_us, 900.0);
  EXPECT_EQ(d.step_time_error_pct, 0.0);
  EXPECT_EQ(d.predicted_bubble, 1.0 / 3.0);
  EXPECT_EQ(d.bubble_error_points, 0.0);
  ASSERT_EQ(d.kinds.size(), 2u);
  EXPECT_EQ(d.kinds[0].kind, ActionKind::F);
  EXPECT_EQ(d.kinds[1].kind, ActionKind::B);
  for (const auto& k : d.kinds) {
    EXPECT_EQ(k.count, 4);
    EXPECT_EQ(k.predicted_mean_us, k.measured_mean_us);
    EXPECT_EQ(k.mean_abs_error_us, 0.0);
    EXPECT_EQ(k.mean_error_pct, 0.0);
  }
  EXPECT_EQ(d.mean_abs_start_drift_us, 0.0);
  EXPECT_EQ(d.max_abs_start_drift_us, 0.0);
  EXPECT_EQ(d.peak_activation_error_pct, (std::vector<double>{0.0, 0.0}));
  // All errors tie at 0, so the list keeps (rank, action) order: F before B.
  EXPECT_EQ(worst_texts(d), (std::vector<std::string>{"0F0@0", "0F1@0", "0B0@0", "0B1@0", "1F0@1",
                                                      "1F1@1", "1B0@1", "1B1@1"}));
}

TEST(DiffTimelines, MeasuredTenPercentSlowerGivesMinusNinePointZeroNine) {
  const Timeline predicted = gpipe_2x2();
  Timeline measured = slower_by_10_percent(predicted, 5'000'000);
  measured.memory[0].activation_bytes = 1100;
  const TimelineDiff d = diff_timelines(predicted, measured, 3);
  EXPECT_EQ(d.matched, 8);
  EXPECT_EQ(d.measured_step_us, 990.0);
  EXPECT_NEAR(d.step_time_error_pct, -100.0 / 11.0, 1e-12);
  // Scaling every time keeps the bubble: both are the correctly rounded 1/3.
  EXPECT_EQ(d.measured_bubble, 1.0 / 3.0);
  EXPECT_EQ(d.bubble_error_points, 0.0);
  ASSERT_EQ(d.kinds.size(), 2u);
  EXPECT_EQ(d.kinds[0].predicted_mean_us, 100.0);
  EXPECT_EQ(d.kinds[0].measured_mean_us, 110.0);
  EXPECT_EQ(d.kinds[0].mean_abs_error_us, 10.0);
  EXPECT_NEAR(d.kinds[0].mean_error_pct, -100.0 / 11.0, 1e-12);
  EXPECT_EQ(d.kinds[1].measured_mean_us, 220.0);
  EXPECT_EQ(d.kinds[1].mean_abs_error_us, 20.0);
  // Drift is -s/10 for a predicted start s (the 5 ms offset cancels):
  // |drift| = 0, 10, 50, 70 on rank 0 and 10, 20, 30, 50 on rank 1.
  EXPECT_EQ(d.mean_abs_start_drift_us, 30.0);
  EXPECT_EQ(d.max_abs_start_drift_us, 70.0);
  ASSERT_EQ(d.peak_activation_error_pct.size(), 2u);
  EXPECT_NEAR(d.peak_activation_error_pct[0], -100.0 / 11.0, 1e-12);
  EXPECT_EQ(d.peak_activation_error_pct[1], 0.0);
  // Every B is 20 us off, every F 10 us: the three worst are B, in (rank, action) order.
  EXPECT_EQ(worst_texts(d), (std::vector<std::string>{"0B0@0", "0B1@0", "1B0@1"}));
  EXPECT_EQ(d.worst[0].predicted_us, 200.0);
  EXPECT_EQ(d.worst[0].measured_us, 220.0);
  EXPECT_EQ(d.worst[0].error_us, -20.0);
  EXPECT_EQ(d.worst[0].start_drift_us, -70.0);
}

TEST(DiffTimelines, ReportsActionsMissingOnEitherSide) {
  const Timeline predicted = gpipe_2x2();
  Timeline measured = predicted;
  std::erase_if(measured.actions, [](const TimedAction& a) { return to_string(a.action) == "1B0"; });
  measured.actions.push_back(timed(0, "0STEP", 900, 905));
  measured.actions.push_back(timed(1, "1STEP", 700, 701));
  const TimelineDiff d = diff_timelines(predicted, measured);
  EXPECT_EQ(d.matched, 7);
  EXPECT_EQ(d.only_in_predicted, (std::vector<std::string>{"1B0 (rank 1)"}));
  EXPECT_EQ(d.only_in_measured, (std::vector<std::string>{"0STEP (rank 0)", "1STEP (rank 1)"}));
  EXPECT_EQ(d.measured_step_us, 905.0);
  const std::string text = to_text(d);
  EXPECT_NE(text.find("only in predicted: 1B0 (rank 1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("only in measured: 0STEP (rank 0), 1STEP (rank 1)\n"), std::string::npos);
}

// Comm actions count in the worst list but not in the per-kind table; a STEP
// of 0 us predicted against 10 us measured is -100 %.
TEST(DiffTimelines, AggregatesComputeKindsAndRanksWorstFirst) {
  Timeline predicted;
  predicted.info = gpipe_info(2, 1);
  Timeline measured = predicted;
  predicted.actions = {timed(0, "0F0", 0, 100), timed(0, "0SEND_F0", 100, 110),
                       timed(1, "1RECV_F0", 100, 110), timed(1, "1F0", 110, 210),
                       timed(0, "0STEP", 210, 210)};
  measured.actions = {timed(0, "0F0", 0, 130), timed(0, "0SEND_F0", 130, 190),
                      timed(1, "1RECV_F0", 130, 190), timed(1, "1F0", 190, 260),
                      timed(0, "0STEP", 260, 270)};
  const TimelineDiff d = diff_timelines(predicted, measured);
  ASSERT_EQ(d.kinds.size(), 2u);
  EXPECT_EQ(d.kinds[0].kind, ActionKind::F);
  EXPECT_EQ(d.kinds[0].count, 2);
  EXPECT_EQ(d.kinds[0].predicted_mean_us, 100.0);
  EXPECT_EQ(d.kinds[0].measured_mean_us, 100.0);  // (130 + 70) / 2: errors of +-30 cancel
  EXPECT_EQ(d.kinds[0].mean_abs_error_us, 30.0);
  EXPECT_EQ(d.kinds[0].mean_error_pct, 0.0);
  EXPECT_EQ(d.kinds[1].kind, ActionKind::STEP);
  EXPECT_EQ(d.kinds[1].count, 1);
  EXPECT_EQ(d.kinds[1].predicted_mean_us, 0.0);
  EXPECT_EQ(d.kinds[1].measured_mean_us, 10.0);
  EXPECT_EQ(d.kinds[1].mean_error_pct, -100.0);
  // |errors| 50, 50, 30, 30, 10; ties stay in (rank, action) order.
  EXPECT_EQ(worst_texts(d),
            (std::vector<std::string>{"0SEND_F0@0", "1RECV_F0@1", "0F0@0", "1F0@1", "0STEP@0"}));
  EXPECT_EQ(d.worst[0].error_us, -50.0);
  EXPECT_EQ(d.worst[3].error_us, 30.0);
  EXPECT_EQ(d.worst[3].start_drift_us, -80.0);
  EXPECT_EQ(worst_texts(diff_timelines(predicted, measured, 2)),
            (std::vector<std::string>{"0SEND_F0@0", "1RECV_F0@1"}));
  EXPECT_TRUE(diff_timelines(predicted, measured, 0).worst.empty());
}

TEST(DiffTimelines, PercentOfAMeasuredZeroIsNaNAndNullInJson) {
  Timeline predicted;
  predicted.info = gpipe_info(1, 1);
  Timeline measured = predicted;
  predicted.actions = {timed(0, "0F0", 0, 100), timed(0, "0STEP", 100, 110)};
  predicted.memory = {{Rank{0}, 0, 500}};
  measured.actions = {timed(0, "0F0", 0, 100), timed(0, "0STEP", 100, 100)};
  const TimelineDiff d = diff_timelines(predicted, measured);
  EXPECT_TRUE(std::isnan(d.kinds[1].mean_error_pct));
  ASSERT_EQ(d.peak_activation_error_pct.size(), 1u);
  EXPECT_TRUE(std::isnan(d.peak_activation_error_pct[0]));
  const json j = to_json(d);
  EXPECT_TRUE(j["kinds"][1]["mean_error_pct"].is_null());
  EXPECT_TRUE(j["peak_activation_error_pct"][0].is_null());
  const std::string text = to_text(d);
  EXPECT_NE(text.find("peak activation memory error per rank: n/a\n"), std::string::npos) << text;
}

TEST(DiffTimelines, JsonHoldsEveryField) {
  Timeline measured = slower_by_10_percent(gpipe_2x2(), 0);
  measured.actions.erase(measured.actions.begin() + 1);  // 0F1: the step time stays 990 us
  const json j = to_json(diff_timelines(gpipe_2x2(), measured, 1));
  EXPECT_EQ(j["predicted"]["source"], "sim");
  EXPECT_EQ(j["measured"]["source"], "cpu");
  EXPECT_EQ(j["measured"]["device"], "Test CPU");
  EXPECT_EQ(j["measured"]["schedule"], "gpipe");
  EXPECT_EQ(j["measured"]["num_stages"], 2);
  EXPECT_EQ(j["matched"], 7);
  EXPECT_EQ(j["only_in_predicted"], json::array({"0F1 (rank 0)"}));
  EXPECT_EQ(j["only_in_measured"], json::array());
  EXPECT_EQ(j["predicted_step_us"], 900.0);
  EXPECT_EQ(j["measured_step_us"], 990.0);
  EXPECT_NEAR(j["step_time_error_pct"].get<double>(), -100.0 / 11.0, 1e-12);
  // Measured busy 1320 - 110 us over 2 x 990 us: bubble 770/1980 against 600/1800.
  EXPECT_NEAR(j["measured_bubble"].get<double>(), 770.0 / 1980.0, 1e-15);
  EXPECT_NEAR(j["bubble_error_points"].get<double>(), -50.0 / 9.0, 1e-12);
  EXPECT_EQ(j["kinds"][0]["count"], 3);
  EXPECT_EQ(j["kinds"][1]["kind"], "B");
  EXPECT_EQ(j["kinds"][1]["count"], 4);
  EXPECT_EQ(j["kinds"][1]["mean_abs_error_us"], 20.0);
  EXPECT_EQ(j["max_abs_start_drift_us"], 70.0);
  EXPECT_EQ(j["peak_activation_error_pct"], json::array({0.0, 0.0}));
  EXPECT_EQ(j["worst"], json::parse(R"([{"rank": 0, "action": "0B0", "predicted_us": 200.0,
      "measured_us": 220.0, "error_us": -20.0, "start_drift_us": -70.0}])"));
}

TEST(DiffTimelines, TextReportReadsLikeTheDesign) {
  Timeline measured = slower_by_10_percent(gpipe_2x2(), 5'000'000);
  measured.memory[0].activation_bytes = 1100;
  const std::string text = to_text(diff_timelines(gpipe_2x2(), measured, 1));
  EXPECT_EQ(text,
            "predicted: sim (gpipe K=2 M=2)   measured: cpu (Test CPU, gpipe K=2 M=2)\n"
            "actions     matched 8, only in predicted 0, only in measured 0\n"
            "step time   predicted      900.0 us   measured      990.0 us   error -9.09 %\n"
            "bubble      predicted       33.3 %    measured       33.3 %    error +0.0 points\n"
            "per kind    count  predicted mean  measured mean  mean |err|  mean err\n"
            "  F             4        100.0 us       110.0 us     10.0 us    -9.1 %\n"
            "  B             4        200.0 us       220.0 us     20.0 us    -9.1 %\n"
            "start drift mean 30.0 us, max 70.0 us\n"
            "peak activation memory error per rank: -9.1 % +0.0 %\n"
            // No messages here, so nothing explains a gap: all of it is other.
            "waits       each rank's idle time (predicted | measured): for the peer stage's compute, in transfers, "
            "after its last action, other\n"
            "  rank 0    idle 300.0 | 330.0 us: peer 0.0 | 0.0, transfers 0.0 | 0.0, after last 0.0 | 0.0, "
            "other 300.0 | 330.0\n"
            "  rank 1    idle 300.0 | 330.0 us: peer 0.0 | 0.0, transfers 0.0 | 0.0, after last 200.0 | 220.0, "
            "other 100.0 | 110.0\n"
            "worst actions (largest |duration error| first):\n"
            "  0B0 (rank 0)     predicted 200.0 us  measured 220.0 us  error -20.0 us  "
            "start drift -70.0 us\n");
}

TEST(DiffTimelines, ReadsBackTheSameFromChromeTraces) {
  // A fresh folder per run, so that test programs running side by side do not collide.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpipe_diff_test_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const Timeline predicted = gpipe_2x2();
  const Timeline measured = slower_by_10_percent(predicted, 123'457);
  write_chrome_trace(predicted, dir / "predicted.json");
  write_chrome_trace(measured, dir / "measured.json");
  const json from_files = to_json(
      diff_timelines(read_chrome_trace(dir / "predicted.json"), read_chrome_trace(dir / "measured.json")));
  std::filesystem::remove_all(dir);
  EXPECT_EQ(from_files, to_json(diff_timelines(predicted, measured)));
}

TEST(DiffTimelines, TransfersCompareTheLinkModelWithTheBytesOnceBothSidesWereThere) {
  // Two messages of GPipe K=2, M=1: the activation 0F0 -> 1F0 and the gradient 1B0 -> 0B0.
  Timeline predicted;
  predicted.info = gpipe_info(2, 1);
  predicted.actions = {timed(0, "0F0", 0, 100),        timed(0, "0SEND_F0", 100, 110), timed(1, "1RECV_F0", 100, 110),
                       timed(1, "1F0", 110, 210),      timed(1, "1B0", 210, 410),      timed(1, "1SEND_B0", 410, 430),
                       timed(0, "0RECV_B0", 410, 430), timed(0, "0B0", 430, 630)};
  Timeline measured = predicted;
  measured.info.source = "cpu";
  // The activation: its RECV began (waiting) at 50 before the send at 100;
  // the bytes took 100..120, 20 us against the model's 10 (-50 %).
  measured.actions[1] = timed(0, "0SEND_F0", 100, 101);
  measured.actions[2] = timed(1, "1RECV_F0", 50, 120);
  // The gradient: its RECV began at 450, after the send at 410: 450..455,
  // 5 us against 20 (+300 %).
  measured.actions[5] = timed(1, "1SEND_B0", 410, 411);
  measured.actions[6] = timed(0, "0RECV_B0", 450, 455);
  const TimelineDiff d = diff_timelines(predicted, measured);
  EXPECT_EQ(d.transfers.count, 2);
  EXPECT_DOUBLE_EQ(d.transfers.predicted_mean_us, 15.0);
  EXPECT_DOUBLE_EQ(d.transfers.measured_mean_us, 12.5);
  EXPECT_DOUBLE_EQ(d.transfers.mean_error_pct, 20.0);          // (30 - 25) / 25
  EXPECT_DOUBLE_EQ(d.transfers.median_abs_error_pct, 300.0);  // the upper of two
  EXPECT_DOUBLE_EQ(d.transfers.max_abs_error_pct, 300.0);
  EXPECT_EQ(to_json(d)["transfers"]["count"], 2);
  EXPECT_NE(to_text(d).find("transfers   2 messages: predicted mean 15.0 us, measured 12.5 us"), std::string::npos);
  // Without messages nothing is said.
  EXPECT_EQ(diff_timelines(gpipe_2x2(), gpipe_2x2()).transfers.count, 0);
}

TEST(DiffTimelines, ReductionsCompareEachDataParallelReductionApartFromItsStart) {
  // One stage's step with its gradients reduced over replicas: REDUCE_GRAD
  // once on the compute stream (the start) and once on the reduce stream
  // (the reduction, 40 us predicted, 50 measured: -20 %).
  const auto on_reduce = [](TimedAction a) {
    a.stream = timelines::Stream::reduce;
    return a;
  };
  Timeline predicted;
  predicted.info = gpipe_info(1, 1);
  predicted.actions = {timed(0, "0F0", 0, 100),           timed(0, "0B0", 100, 300),
                       timed(0, "0REDUCE_GRAD", 300, 302), on_reduce(timed(0, "0REDUCE_GRAD", 300, 340)),
                       timed(0, "0WAIT_REDUCE_GRAD", 340, 340), timed(0, "0STEP", 340, 350)};
  Timeline measured = predicted;
  measured.actions[3] = on_reduce(timed(0, "0REDUCE_GRAD", 301, 351));
  measured.actions[4] = timed(0, "0WAIT_REDUCE_GRAD", 351, 351);
  measured.actions[5] = timed(0, "0STEP", 351, 361);
  const TimelineDiff d = diff_timelines(predicted, measured);
  EXPECT_EQ(d.matched, 5);  // the reduction is not an action twice
  EXPECT_EQ(d.reductions.count, 1);
  EXPECT_DOUBLE_EQ(d.reductions.predicted_mean_us, 40.0);
  EXPECT_DOUBLE_EQ(d.reductions.measured_mean_us, 50.0);
  EXPECT_DOUBLE_EQ(d.reductions.mean_error_pct, -20.0);
  EXPECT_DOUBLE_EQ(d.reductions.max_abs_error_pct, 20.0);
  EXPECT_EQ(to_json(d)["reductions"]["count"], 1);
  EXPECT_NE(to_text(d).find("reductions  1 data-parallel: predicted mean 40.0 us, measured 50.0 us, error -20.0 %"),
            std::string::npos)
      << to_text(d);
  EXPECT_EQ(diff_timelines(gpipe_2x2(), gpipe_2x2()).reductions.count, 0);
}

TEST(DiffTimelines, TensorParallelCollectivesCompareEachActionsSum) {
  // 0F0's two all-reduces take 10 + 10 us predicted and 12 + 13 measured
  // (-20 %); 1F0's 30 predicted and 20 measured (+50 %); 0B0's only in the
  // prediction, so it is not compared.
  const auto span = [](int rank, const char* within, std::int64_t start, std::int64_t end) {
    return timelines::CollectiveSpan{Rank{rank}, schedules::parse_action(within), "all-reduce", 64, start, end};
  };
  Timeline predicted = gpipe_2x2();
  predicted.info.tensor_parallel = 2;
  Timeline measured = predicted;
  predicted.collectives = {span(0, "0F0", 0, 10'000), span(0, "0F0", 20'000, 30'000),
                           span(1, "1F0", 0, 30'000), span(0, "0B0", 0, 5'000)};
  measured.collectives = {span(0, "0F0", 0, 12'000), span(0, "0F0", 20'000, 33'000), span(1, "1F0", 0, 20'000)};
  const TimelineDiff d = diff_timelines(predicted, measured);
  EXPECT_EQ(d.tensor_parallel.count, 2);
  EXPECT_DOUBLE_EQ(d.tensor_parallel.predicted_mean_us, 25.0);
  EXPECT_DOUBLE_EQ(d.tensor_parallel.measured_mean_us, 22.5);
  EXPECT_DOUBLE_EQ(d.tensor_parallel.max_abs_error_pct, 50.0);
  EXPECT_EQ(d.tensor_parallel.abs_errors_pct, (std::vector<double>{20.0, 50.0}));
  EXPECT_EQ(to_json(d)["tensor_parallel_collectives"]["count"], 2);
  EXPECT_NE(to_text(d).find("tp comm     2 actions' tensor-parallel collectives: predicted mean 25.0 us, measured "
                            "22.5 us, error +11.1 %"),
            std::string::npos)
      << to_text(d);
  EXPECT_EQ(diff_timelines(gpipe_2x2(), gpipe_2x2()).tensor_parallel.count, 0);
}

TEST(DiffTimelines, ContextParallelCollectivesCompareApartFromTheTensorParallelOnes) {
  // 0F0 runs a tensor-parallel all-reduce (10 us predicted, 12 measured) and
  // a context-parallel all-gather (20 predicted, 16 measured): each group's
  // sum is its own comparison.
  using timelines::CollectiveGroup;
  const auto span = [](const char* what, std::int64_t end, CollectiveGroup group) {
    return timelines::CollectiveSpan{Rank{0}, schedules::parse_action("0F0"), what, 64, 0, end, group};
  };
  Timeline predicted = gpipe_2x2();
  predicted.info.tensor_parallel = 2;
  predicted.info.context_parallel = 2;
  Timeline measured = predicted;
  predicted.collectives = {span("all-reduce", 10'000, CollectiveGroup::tensor),
                           span("all-gather", 20'000, CollectiveGroup::context)};
  measured.collectives = {span("all-reduce", 12'000, CollectiveGroup::tensor),
                          span("all-gather", 16'000, CollectiveGroup::context)};
  const TimelineDiff d = diff_timelines(predicted, measured);
  EXPECT_EQ(d.tensor_parallel.count, 1);
  EXPECT_DOUBLE_EQ(d.tensor_parallel.measured_mean_us, 12.0);
  EXPECT_EQ(d.context_parallel.count, 1);
  EXPECT_DOUBLE_EQ(d.context_parallel.predicted_mean_us, 20.0);
  EXPECT_DOUBLE_EQ(d.context_parallel.measured_mean_us, 16.0);
  EXPECT_DOUBLE_EQ(d.context_parallel.mean_error_pct, 25.0);
  EXPECT_EQ(to_json(d)["context_parallel_collectives"]["count"], 1);
  EXPECT_NE(to_text(d).find("cp comm     1 actions' context-parallel collectives: predicted mean 20.0 us, measured "
                            "16.0 us, error +25.0 %"),
            std::string::npos)
      << to_text(d);
}

TEST(DiffTimelinesErrors, DifferentSchedulesNameEveryField) {
  const Timeline predicted = gpipe_2x2();
  Timeline measured = gpipe_2x2();
  measured.info = gpipe_info(3, 4);
  EXPECT_EQ(diff_error(predicted, measured),
            "predicted and measured traces describe different schedules (predicted vs measured): "
            "num_ranks 2 vs 3, num_stages 2 vs 3, num_microbatches 2 vs 4, "
            "stage_to_rank [0, 1] vs [0, 1, 2]");
  measured.info = gpipe_info(2, 2);
  measured.info.schedule_name = "1f1b";
  measured.info.recompute = RecomputePolicy::stage;
  EXPECT_EQ(diff_error(predicted, measured),
            "predicted and measured traces describe different schedules (predicted vs measured): "
            "name \"gpipe\" vs \"1f1b\", recompute never vs stage");
  measured.info = gpipe_info(2, 2);
  measured.info.stage_to_rank = {Rank{1}, Rank{0}};
  EXPECT_NE(diff_error(predicted, measured).find("stage_to_rank [0, 1] vs [1, 0]"), std::string::npos);
}

TEST(DiffTimelinesErrors, NothingInCommon) {
  Timeline measured = gpipe_2x2();
  measured.actions = {timed(0, "0STEP", 0, 1)};
  EXPECT_EQ(diff_error(gpipe_2x2(), measured),
            "predicted and measured traces have no action in common (predicted has 8, measured "
            "has 1)");
  measured.actions.clear();
  EXPECT_NE(diff_error(gpipe_2x2(), measured).find("no action in common"), std::string::npos);
}

TEST(DiffTimelinesErrors, ActionTwiceOnOneRank) {
  Timeline measured = gpipe_2x2();
  measured.actions.push_back(timed(0, "0F0", 1000, 1100));
  EXPECT_EQ(diff_error(gpipe_2x2(), measured), "measured trace: action 0F0 appears twice on rank 0");
  EXPECT_EQ(diff_error(measured, gpipe_2x2()), "predicted trace: action 0F0 appears twice on rank 0");
}

TEST(DiffTimelinesErrors, ActionOnAnUnknownRank) {
  Timeline measured = gpipe_2x2();
  measured.actions.push_back(timed(5, "1F1", 0, 10));
  EXPECT_EQ(diff_error(gpipe_2x2(), measured),
            "measured trace: action 1F1 is on rank 5, outside the timeline's 2 ranks");
}

TEST(DiffTimelinesErrors, NegativeWorst) {
  EXPECT_EQ(diff_error(gpipe_2x2(), gpipe_2x2(), -1), "worst must be 0 or more, not -1");
}

}  // namespace
}  // namespace gpipe::sim
