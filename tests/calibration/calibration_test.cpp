// Calibration, the simulator against real runs, on a tiny grid: rows in grid
// order, configurations that cannot exist skipped with their reason, every
// action of the prediction matched in the measurement, the run using the
// predicted partition, and the measured activation peak equal to the
// prediction byte for byte. Also the plan of a model (partition, profile
// checks) it rests on. No assertion on times beyond "positive".
#include "calibration/calibration.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/profiler.hpp"
#include "models/model_spec.hpp"
#include "plan/model_profile.hpp"
#include "plan/plan.hpp"
#include "sim/scenario.hpp"
#include "tests/error_of.hpp"

namespace gpipe::calibration {
namespace {

using schedules::RecomputePolicy;
using testing::error_of;

// mlp:layers=2 has 3 layers (block0, block1, loss).
const models::Model& tiny_model() {
  static const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  return model;
}

const profiles::Profile& tiny_profile() {
  static const profiles::Profile profile = [] {
    exec::ProfilerOptions options;
    options.warmup = 0;
    options.repeats = 1;
    options.link_round_trips = 10;
    return exec::cpu::profile_cpu(tiny_model(), std::vector<int>{1, 2}, options);
  }();
  return profile;
}

CalibrationOptions tiny_grid() {
  CalibrationOptions options;
  options.model = tiny_model();
  options.grid.schedules = {"gpipe", "1f1b"};
  options.grid.recompute = {RecomputePolicy::never, RecomputePolicy::stage_except_last};
  options.grid.stages = {2, 4};      // 4 > 3 layers: skipped
  options.grid.microbatches = {2, 8};  // 8 > batch 4: skipped
  options.grid.base.batch = 4;
  options.steps = 2;
  options.watchdog_seconds = 30;
  return options;
}

TEST(Calibration, TinyGridRunsWhatCanExistAndSkipsTheRest) {
  CalibrationOptions options = tiny_grid();
  int reported = 0;
  options.on_row = [&](const CalibrationRow&) { ++reported; };
  const std::vector<CalibrationRow> rows = run_calibration(tiny_profile(), options);
  ASSERT_EQ(rows.size(), 16U);
  EXPECT_EQ(reported, 16);
  int ran = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CalibrationRow& r = rows[i];
    // Grid order: schedule, recompute, K, M (M fastest).
    EXPECT_EQ(r.request.schedule, i < 8 ? "gpipe" : "1f1b");
    EXPECT_EQ(r.request.recompute, (i / 4) % 2 == 0 ? RecomputePolicy::never : RecomputePolicy::stage_except_last);
    EXPECT_EQ(r.request.stages, (i / 2) % 2 == 0 ? 2 : 4);
    EXPECT_EQ(r.request.microbatches, i % 2 == 0 ? 2 : 8);
    SCOPED_TRACE(::testing::Message() << r.request.schedule << " K=" << r.request.stages
                                      << " M=" << r.request.microbatches);
    if (r.request.stages == 4) {
      EXPECT_EQ(r.skipped, "--stages 4 exceeds the 3 layers of the model: every stage needs at least one layer");
      continue;
    }
    if (r.request.microbatches == 8) {
      EXPECT_EQ(r.skipped, "--microbatches 8 exceeds --batch 4: every micro-batch needs a sample");
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.skipped;
    ++ran;
    EXPECT_EQ(r.microbatch_sizes, (std::vector<int>{2, 2}));
    ASSERT_EQ(r.partition.size(), 2U);
    EXPECT_EQ(r.partition[0] + r.partition[1], 3);
    // Every action of the prediction happened in the run, and nothing else.
    EXPECT_GT(r.diff.matched, 0);
    EXPECT_TRUE(r.diff.only_in_predicted.empty()) << r.diff.only_in_predicted.front();
    EXPECT_TRUE(r.diff.only_in_measured.empty()) << r.diff.only_in_measured.front();
    EXPECT_GT(r.diff.measured_step_us, 0.0);
    EXPECT_GT(r.diff.predicted_step_us, 0.0);
    EXPECT_EQ(r.measured.ranks.size(), 2U);
    // The executor keeps exactly what the simulator's memory rules say.
    EXPECT_GT(r.predicted_peak_activation_bytes, 0);
    EXPECT_EQ(r.measured_peak_activation_bytes, r.predicted_peak_activation_bytes);
    for (std::size_t rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(r.measured.ranks[rank].peak_activation_bytes, r.predicted.ranks[rank].peak_activation_bytes)
          << "rank " << rank;
    }
  }
  EXPECT_EQ(ran, 4);
}

TEST(Calibration, CsvHasOneRowPerConfiguration) {
  CalibrationOptions options = tiny_grid();
  options.grid.schedules = {"gpipe"};
  options.grid.recompute = {RecomputePolicy::never};
  const std::vector<CalibrationRow> rows = run_calibration(tiny_profile(), options);
  const std::string csv = calibration_csv(rows);
  std::istringstream in(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5U);
  EXPECT_EQ(lines[0],
            "schedule,recompute,stages,stages_per_rank,microbatches,micro_batch_size,batch,partition,"
            "status,reason,predicted_step_us,measured_step_us,step_time_error_pct,predicted_bubble,measured_bubble,"
            "bubble_fraction_analytic,bubble_error_points,predicted_peak_activation_bytes,"
            "measured_peak_activation_bytes,peak_activation_equal,transfers,predicted_transfer_us,"
            "measured_transfer_us,transfer_error_pct,transfer_median_abs_error_pct,step_samples,"
            "measured_step_q1_us,measured_step_q3_us,noise_band_pct,outside_band_points,data_parallel,reductions,"
            "predicted_reduction_us,measured_reduction_us,reduction_error_pct,tensor_parallel,tp_collective_actions,"
            "predicted_tp_collective_us,measured_tp_collective_us,tp_collective_error_pct,zero,context_parallel,"
            "cp_collective_actions,predicted_cp_collective_us,measured_cp_collective_us,cp_collective_error_pct");
  // The partition is quoted ("2,1" or "1,2": balanced on measured costs).
  EXPECT_TRUE(lines[1].starts_with("gpipe,never,2,1,2,2,4,\"2,1\",ok,,") ||
              lines[1].starts_with("gpipe,never,2,1,2,2,4,\"1,2\",ok,,"))
      << lines[1];
  // Peak activation equal, then the link model over the 2 x 2 messages of K=2, M=2.
  EXPECT_NE(lines[1].find(",1,4,"), std::string::npos) << lines[1];
  // Then the noise columns: one warm step (steps 2) in one round is one
  // sample, so both quartiles are its time and the band is 0; one replica,
  // no reductions, one part of each rank with no collectives, no ZeRO, one
  // member of each sequence with no collectives, close the row.
  const CalibrationRow& r = rows.front();
  EXPECT_EQ(r.noise.samples, 1);
  EXPECT_EQ(r.noise.q1_us, r.noise.q3_us);
  EXPECT_TRUE(lines[1].ends_with(fmt::format(",1,{:.3f},{:.3f},0.000,{:.3f},1,0,0.000,0.000,,1,0,0.000,0.000,,0,1,0,0.000,0.000,", r.noise.q1_us,
                                             r.noise.q3_us, r.outside_band_points())))
      << lines[1];
  // bubble_fraction_analytic of K=2, M=2: 1/3.
  EXPECT_NE(lines[1].find(",0.333333,"), std::string::npos);
  EXPECT_EQ(lines[2], "gpipe,never,2,,8,,4,,skipped,--microbatches 8 exceeds --batch 4: every micro-batch "
                      "needs a sample,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,");
  EXPECT_EQ(lines[3].substr(0, 29), "gpipe,never,4,,2,,4,,skipped,");
}

TEST(Calibration, RoundsInterleaveTheGridAndPoolEveryWarmStep) {
  CalibrationOptions options = tiny_grid();
  options.grid.schedules = {"gpipe", "1f1b"};
  options.grid.recompute = {RecomputePolicy::never};
  options.grid.stages = {2};
  options.grid.microbatches = {2, 8};  // M=8 cannot exist: never trained
  options.steps = 3;
  options.rounds = 3;
  std::vector<std::string> trained;
  std::vector<std::string> runs;
  options.train = [&](const exec::TrainOptions& t) {
    trained.push_back(t.schedule.name);
    EXPECT_EQ(t.measured_steps, 2);
    return exec::cpu::train(t);
  };
  options.on_run = [&](int round, int index, int count) {
    runs.push_back(::testing::PrintToString(round) + "." + ::testing::PrintToString(index) + "/" +
                   ::testing::PrintToString(count));
  };
  std::vector<std::string> finished;
  options.on_row = [&](const CalibrationRow& r) { finished.push_back(r.request.schedule); };
  const std::vector<CalibrationRow> rows = run_calibration(tiny_profile(), options);
  // A B A B A B, not A A A B B B.
  EXPECT_EQ(trained, (std::vector<std::string>{"gpipe", "1f1b", "gpipe", "1f1b", "gpipe", "1f1b"}));
  EXPECT_EQ(runs, (std::vector<std::string>{"0.0/2", "0.1/2", "1.0/2", "1.1/2", "2.0/2", "2.1/2"}));
  // Each row once, skipped ones included, in the last round.
  EXPECT_EQ(finished, (std::vector<std::string>{"gpipe", "gpipe", "1f1b", "1f1b"}));
  ASSERT_EQ(rows.size(), 4U);
  for (const CalibrationRow& r : rows) {
    if (!r.ok()) {
      EXPECT_TRUE(r.step_us.empty());
      continue;
    }
    // 3 rounds x 2 warm steps, pooled; the median lies within the quartiles.
    ASSERT_EQ(r.step_us.size(), 6U);
    EXPECT_EQ(r.noise.samples, 6);
    EXPECT_LE(r.noise.q1_us, r.noise.median_us);
    EXPECT_LE(r.noise.median_us, r.noise.q3_us);
    EXPECT_DOUBLE_EQ(r.step_error_pct(), (r.diff.predicted_step_us - r.noise.median_us) / r.noise.median_us * 100);
    EXPECT_TRUE(r.diff.only_in_predicted.empty());
    EXPECT_EQ(r.measured_peak_activation_bytes, r.predicted_peak_activation_bytes);
  }
}

TEST(Calibration, RemeasuredProfilesPredictFromTheirMedian) {
  // The profile again before rounds 2 and 3: the given one's times x 1, x 3
  // and x 2, so the median is twice the given one's, and every prediction
  // of the last round is that of the median, with the first partition.
  CalibrationOptions options = tiny_grid();
  options.grid.schedules = {"gpipe"};
  options.grid.recompute = {RecomputePolicy::never};
  options.grid.stages = {2};
  options.grid.microbatches = {2};
  options.rounds = 3;
  // (The link's latency and the contention left out, so that doubling every
  // time doubles the step.)
  const auto times = [](double factor) {
    profiles::Profile p = tiny_profile();
    p.link.latency_us = 0;
    p.contention.clear();
    for (profiles::LayerProfile& layer : p.layers) {
      layer.optimizer_us *= factor;
      for (profiles::ProfileSample& s : layer.samples) {
        s.fwd_us *= factor;
        s.bwd_us *= factor;
        if (s.bwd_input_us) *s.bwd_input_us *= factor;
        if (s.bwd_weight_us) *s.bwd_weight_us *= factor;
      }
    }
    return p;
  };
  std::vector<int> asked;
  options.measure_profile = [&](int round) {
    asked.push_back(round);
    return times(round == 2 ? 3.0 : 2.0);
  };
  std::optional<profiles::Profile> median;
  options.on_median_profile = [&](const profiles::Profile& p) { median = p; };
  const std::vector<CalibrationRow> rows = run_calibration(times(1.0), options);
  EXPECT_EQ(asked, (std::vector<int>{2, 3}));
  ASSERT_TRUE(median.has_value());
  EXPECT_EQ(*median, times(2.0));
  ASSERT_EQ(rows.size(), 1U);
  plan::PlanRequest request = rows[0].request;
  request.optimizer = options.optimizer.kind;
  request.partition = {.method = models::PartitionMethod::counts, .counts = rows[0].partition};
  const sim::Prediction expected = sim::predict(times(2.0), sim::Scenario{.request = request, .conditions = {}});
  EXPECT_DOUBLE_EQ(rows[0].diff.predicted_step_us, expected.metrics.step_time_us);
  const sim::Prediction first = sim::predict(times(1.0), sim::Scenario{.request = request, .conditions = {}});
  EXPECT_GT(rows[0].diff.predicted_step_us, 1.5 * first.metrics.step_time_us);
}

// ZeRO 1 over replicas with a tied embedding on one stage: the executor
// cannot train it (its two copies' shares differ), so the row is skipped
// with the executor's reason, before any process is started.
TEST(Calibration, SkipsWhatTheExecutorCannotTrain) {
  CalibrationOptions options;
  options.model = models::parse_model("llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32,tied=1");
  exec::ProfilerOptions profiling;
  profiling.warmup = 0;
  profiling.repeats = 1;
  profiling.link_round_trips = 10;
  const profiles::Profile profile = exec::cpu::profile_cpu(options.model, std::vector<int>{2}, profiling);
  options.grid.schedules = {"gpipe"};
  options.grid.stages = {1};
  options.grid.microbatches = {1};
  options.grid.base.batch = 2;
  options.grid.base.data_parallel = 2;
  options.grid.base.zero = 1;
  options.train = [](const exec::TrainOptions&) -> exec::TrainResult { throw std::logic_error("nothing should train"); };
  const std::vector<CalibrationRow> rows = run_calibration(profile, options);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_FALSE(rows[0].ok());
  EXPECT_NE(rows[0].skipped.find("ties its embedding to its head"), std::string::npos) << rows[0].skipped;
}

TEST(Calibration, RejectsWhatIsNoGrid) {
  CalibrationOptions options = tiny_grid();
  options.rounds = 0;
  EXPECT_EQ(error_of([&] { (void)run_calibration(tiny_profile(), options); }), "--rounds must be at least 1, got 0");
  options = tiny_grid();
  options.steps = 1;
  EXPECT_EQ(error_of([&] { (void)run_calibration(tiny_profile(), options); }),
            "--steps must be at least 2 so that the compared step runs warm, got 1");
  options = tiny_grid();
  options.grid.stages.clear();
  EXPECT_NE(error_of([&] { (void)run_calibration(tiny_profile(), options); }).find("--stages"),
            std::string::npos);
  options = tiny_grid();
  options.model = models::parse_model("mlp:layers=3,hidden=8");
  EXPECT_EQ(error_of([&] { (void)run_calibration(tiny_profile(), options); }),
            "--profile: it profiles 'mlp:layers=2,hidden=8', not --model 'mlp:layers=3,hidden=8'");
}

TEST(PlanForModel, BalancesLikeTheSimulatorAndChecksTheModel) {
  // unbalanced:layers=4: block widths H, 3H, 5H, 8H, so costs ramp ~1:3:5:8 and
  // the balanced 3-stage split is 2,1,2 (largest stage 8), not the uniform 2,2,1
  // (largest 13). Hidden 256 keeps the analytic costs well above 1 ns.
  const models::Model model = models::parse_model("unbalanced:layers=4,hidden=256");
  const profiles::Profile profile = plan::balancing_profile(model, std::vector<int>{2});
  EXPECT_EQ(profile.model, model.spec);
  EXPECT_EQ(profile.dtype, "fp32");
  sim::Scenario sc;
  sc.request.stages = 3;
  sc.request.microbatches = 2;
  sc.request.batch = 4;
  // What gpipe-run train does: the model's checks, then the plan.
  const auto plan_for_model = [&] {
    plan::check_request_for_model(model, profile, sc.request);
    return plan::make_plan(profile, sc.request);
  };
  const plan::Plan plan = plan_for_model();
  EXPECT_EQ(plan.partition, sim::predict(profile, sc).plan.partition);
  EXPECT_EQ(plan.partition.layers_per_stage, (std::vector<int>{2, 1, 2}));
  sc.request.stages = 6;
  EXPECT_EQ(error_of([&] { (void)plan_for_model(); }),
            "--stages 6 exceeds the 5 layers of the model: every stage needs at least one layer");
  profiles::Profile renamed = profile;
  renamed.layers[1].name = "other";
  EXPECT_EQ(error_of([&] { plan::check_profile_matches(model, renamed); }),
            "--profile: layers[1] is other (mlp_block), the model's is block1 (mlp_block)");
}

}  // namespace
}  // namespace gpipe::calibration
