// Sweeps: the grid in order, skipped rows with reasons, the same rows whatever
// the thread count, the CSV the plots read, and the best row per K.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/sweep.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::sim {
namespace {

SweepGrid small_grid() {
  SweepGrid g;
  g.grid.stages = {1, 2, 4, 8};
  g.grid.microbatches = {1, 2, 4, 16};
  g.grid.schedules = {"gpipe", "1f1b"};
  g.grid.base.batch = 8;
  return g;
}

TEST(Sweep, GridOrderAndSkippedRows) {
  const auto profile = testing::uniform_profile(4, 10.0, 20.0, 100, 10);
  const auto rows = run_sweep(profile, small_grid(), 1);
  ASSERT_EQ(rows.size(), 2u * 4u * 4u);
  EXPECT_EQ(rows[0].request.schedule, "gpipe");
  EXPECT_EQ(rows[0].request.stages, 1);
  EXPECT_EQ(rows[1].request.microbatches, 2);
  EXPECT_EQ(rows[16].request.schedule, "1f1b");
  int skipped = 0;
  for (const auto& r : rows) {
    if (r.request.stages == 8) {
      EXPECT_EQ(r.skipped,
                "--stages 8 exceeds the 4 layers of the profile: every stage needs at least one layer");
    } else if (r.request.microbatches == 16) {
      EXPECT_EQ(r.skipped, "--microbatches 16 exceeds --batch 8: every micro-batch needs a sample");
    } else {
      EXPECT_TRUE(r.ok()) << r.skipped;
      const int k = r.request.stages;
      const int m = r.request.microbatches;
      EXPECT_DOUBLE_EQ(r.metrics.bubble_fraction, double(k - 1) / double(m + k - 1));
      EXPECT_EQ(r.micro_batch_size, 8 / m);
    }
    skipped += !r.ok();
  }
  EXPECT_EQ(skipped, 2 * (4 + 3));
}

TEST(Sweep, SameRowsWhateverTheThreads) {
  const auto profile = testing::uniform_profile(8, 10.0, 20.0, 100, 10);
  SweepGrid g = small_grid();
  g.grid.recompute = {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage};
  std::size_t last_done = 0;
  const auto one = run_sweep(profile, g, 1);
  const auto four = run_sweep(profile, g, 4, [&](std::size_t done, std::size_t total) {
    EXPECT_LE(done, total);
    last_done = done;
  });
  EXPECT_EQ(last_done, one.size());
  EXPECT_EQ(sweep_csv(one, std::nullopt), sweep_csv(four, std::nullopt));
}

TEST(Sweep, CsvHasTheColumnsThePlotsRead) {
  const auto profile = testing::uniform_profile(2, 10.0, 20.0, 1000, 10);
  SweepGrid g;
  g.grid.stages = {2};
  g.grid.microbatches = {2, 4};
  g.grid.base.batch = 2;
  const auto csv = sweep_csv(run_sweep(profile, g, 1), std::int64_t{5000});
  EXPECT_EQ(csv,
            "schedule,recompute,stages,stages_per_rank,microbatches,micro_batch_size,batch,partition,"
            "status,reason,step_time_us,bubble_fraction,bubble_fraction_analytic,bubble_time_over_ideal,"
            "throughput_samples_per_s,utilization_min,peak_activation_bytes,static_bytes,"
            "peak_memory_bytes,fits\n"
            "gpipe,never,2,1,2,1,2,\"1,1\",ok,,90.000,0.333333,0.333333,0.500000,22222.222,0.666667,"
            "2000,1600,3600,1\n"
            "gpipe,never,2,,4,,2,,skipped,--microbatches 4 exceeds --batch 2: every micro-batch "
            "needs a sample,,,,,,,,,,\n");
}

TEST(Sweep, BestPerStageCountWithinTheMemoryLimit) {
  const auto profile = testing::uniform_profile(4, 10.0, 20.0, 1000, 10, 0);
  SweepGrid g;
  g.grid.stages = {1, 2};
  g.grid.microbatches = {1, 2, 4, 8};
  g.grid.base.batch = 8;
  const auto rows = run_sweep(profile, g, 2);
  const auto best = best_per_stage_count(rows, std::nullopt);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[1]->request.stages, 2);
  EXPECT_EQ(best[1]->request.microbatches, 8);  // the smallest bubble
  // GPipe K=2 keeps M micro-batches of 2 layers x 1000 B x b = 16000 B for any M:
  // a limit below that leaves K=2 out, and K=1 (32000 B) too.
  EXPECT_TRUE(best_per_stage_count(rows, std::int64_t{15999}).empty());
  const auto fits = best_per_stage_count(rows, std::int64_t{16000});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0]->request.stages, 2);
  const auto json = sweep_json(rows, std::int64_t{16000});
  EXPECT_EQ(json.size(), rows.size());
  EXPECT_EQ(json[0]["status"], "ok");
}

// More rows than stream_sweep's window (256 per worker): rows must wait their turn.
SweepGrid grid_of_1024() {
  SweepGrid g;
  g.grid.stages = {1, 2, 4, 8};
  for (int m = 1; m <= 64; ++m) g.grid.microbatches.push_back(m);
  g.grid.schedules = {"gpipe", "1f1b"};
  g.grid.recompute = {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage};
  g.grid.base.batch = 48;  // M above 48 skipped
  return g;
}

TEST(Sweep, StreamedRowsComeInGridOrder) {
  const auto profile = testing::uniform_profile(8, 10.0, 20.0, 100, 10);
  const SweepGrid g = grid_of_1024();
  const std::string expected = sweep_csv(run_sweep(profile, g, 1), std::int64_t{5000});
  for (const int threads : {1, 3}) {
    std::string csv = sweep_csv_head();
    std::size_t rows = 0;
    stream_sweep(profile, g, threads, [&](SweepRow&& r) {
      csv += sweep_csv_row(r, std::int64_t{5000});
      ++rows;
    });
    EXPECT_EQ(rows, 1024u);
    EXPECT_EQ(csv, expected) << threads << " threads";
  }
}

TEST(Sweep, ASinkThatThrowsStopsTheWorkers) {
  const auto profile = testing::uniform_profile(8, 10.0, 20.0, 100, 10);
  std::size_t rows = 0;
  EXPECT_THROW(stream_sweep(profile, grid_of_1024(), 2,
                            [&](SweepRow&&) {
                              if (++rows == 10) throw std::runtime_error("disk full");
                            }),
               std::runtime_error);
  EXPECT_EQ(rows, 10u);
}

TEST(Sweep, BestPerStageCountAsRowsComeIsTheOneOfTheWholeVector) {
  const auto profile = testing::uniform_profile(8, 10.0, 20.0, 100, 10);
  const auto rows = run_sweep(profile, grid_of_1024(), 2);
  for (const std::optional<std::int64_t> limit : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{3000}}) {
    BestPerStageCount streamed(limit);
    for (const SweepRow& r : rows) streamed.offer(r);
    const auto expected = best_per_stage_count(rows, limit);
    const auto got = streamed.rows();
    ASSERT_EQ(got.size(), expected.size());
    ASSERT_FALSE(got.empty());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(sweep_csv_row(*got[i], limit), sweep_csv_row(*expected[i], limit));
    }
  }
}

}  // namespace
}  // namespace gpipe::sim
