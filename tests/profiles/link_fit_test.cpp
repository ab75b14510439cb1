// The link's fit and its measured points: exact recovery of a link that is
// exactly latency + bytes / bandwidth, the relative weighting (an 8-byte
// point counts as much as a 64 MiB one), a refit through the origin instead
// of a negative latency, refusals, the bandwidth refitted to a pipeline's
// messages, and the points surviving a write and read.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "base/error.hpp"
#include "profiles/collectives.hpp"
#include "profiles/link_fit.hpp"
#include "profiles/profile.hpp"
#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

using gpipe::testing::error_of;

std::vector<LinkPoint> exact_points(double latency_us, double bandwidth_GBps) {
  std::vector<LinkPoint> points;
  for (std::int64_t bytes = 8; bytes <= (std::int64_t{64} << 20); bytes *= 2) {
    points.push_back({bytes, latency_us + static_cast<double>(bytes) / (bandwidth_GBps * 1e3)});
  }
  return points;
}

TEST(LinkFit, RecoversAnExactLinearLink) {
  const Link link = fit_link(exact_points(1.5, 12.0), "test");
  EXPECT_NEAR(link.latency_us, 1.5, 1e-9);
  EXPECT_NEAR(link.bandwidth_GBps, 12.0, 1e-9);
  EXPECT_EQ(link.points.size(), 24u);  // 8 B .. 64 MiB
  EXPECT_EQ(link.measured_with, "test");
  EXPECT_NEAR(link_fit_max_relative_error(link), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(link_time_us(link, 12e3), 1.5 + 1.0);
}

TEST(LinkFit, WeighsEverySizeByItsRelativeError) {
  // Two points 10 % off in opposite directions: the relative fit splits the
  // error evenly between the tiny and the huge message, so neither is off by
  // much more than 10 %, and the latency stays near the small message's time.
  std::vector<LinkPoint> points = exact_points(2.0, 10.0);
  points.front().one_way_us *= 1.1;
  points.back().one_way_us *= 0.9;
  const Link link = fit_link(points, "test");
  EXPECT_LT(link_fit_max_relative_error(link), 0.11);
  EXPECT_NEAR(link.latency_us, 2.0, 0.25);
}

TEST(LinkFit, RefitsThroughTheOriginRatherThanANegativeLatency) {
  // Time proportional to bytes with a dip at the smallest size: a free line
  // would cross below zero; the fit keeps latency 0 and the bandwidth.
  std::vector<LinkPoint> points = {{1000, 0.05}, {2000, 0.2}, {4000, 0.4}};
  const Link link = fit_link(points, "test");
  EXPECT_EQ(link.latency_us, 0.0);
  EXPECT_GT(link.bandwidth_GBps, 0.0);
}

TEST(LinkFit, RefusesTooFewOrTimelessPoints) {
  EXPECT_EQ(error_of([] { (void)fit_link({{8, 1.0}}, "t"); }), "a link fit needs at least two measured sizes");
  EXPECT_EQ(error_of([] { (void)fit_link({{8, 1.0}, {16, 0.0}}, "t"); }), "a link point of 16 bytes takes no time");
  EXPECT_EQ(error_of([] { (void)fit_link({{8, 1.0}, {8, 1.0}}, "t"); }),
            "a link fit needs at least two distinct message sizes");
}

TEST(LinkFit, RefitsTheBandwidthToPipelineMessagesKeepingTheLatency) {
  // A ping-pong at 12 GB/s; a pipeline's messages exactly 1.5 us + bytes at
  // 4 GB/s: the refit keeps 1.5 us and finds 4 GB/s, and every pipeline point
  // lies on the model.
  const Link pingpong = fit_link(exact_points(1.5, 12.0), "ping-pong");
  std::vector<LinkPoint> pipeline;
  for (const std::int64_t bytes : {std::int64_t{4} << 20, std::int64_t{1} << 20, std::int64_t{2} << 20}) {
    pipeline.push_back({bytes, 1.5 + static_cast<double>(bytes) / 4e3});
  }
  const Link link = refit_bandwidth(pingpong, pipeline, "both");
  EXPECT_DOUBLE_EQ(link.latency_us, 1.5);
  EXPECT_NEAR(link.bandwidth_GBps, 4.0, 1e-12);
  EXPECT_EQ(link.points, pingpong.points);
  ASSERT_EQ(link.pipeline_points.size(), 3u);
  EXPECT_EQ(link.pipeline_points.front().bytes, std::int64_t{1} << 20);  // sorted
  EXPECT_EQ(link.measured_with, "both");
  EXPECT_NEAR(link_fit_max_relative_error(link), 0.0, 1e-12);         // over the pipeline points
  EXPECT_GT(link_fit_max_relative_error(link, link.points), 0.5);     // the idle ping-pong is far faster
}

TEST(LinkFit, RefitWeighsEachPipelineSizeByItsRelativeError) {
  // One message 10 % slow and one 10 % fast: the per-byte cost between them,
  // neither message off by much more than 10 %.
  const Link pingpong = fit_link(exact_points(0.0, 10.0), "ping-pong");
  const Link link = refit_bandwidth(pingpong, {{1000, 1.1}, {2000, 1.8}}, "t");  // 1 us per 1000 B, +-10 %
  EXPECT_LT(link_fit_max_relative_error(link), 0.11);
  EXPECT_NEAR(link.bandwidth_GBps, 1.0, 0.03);
}

TEST(LinkFit, RefitRefusesMessagesNoSlowerThanTheLatency) {
  const Link pingpong = fit_link(exact_points(5.0, 10.0), "ping-pong");
  EXPECT_EQ(error_of([&] { (void)refit_bandwidth(pingpong, {}, "t"); }),
            "refitting a link's bandwidth needs at least one pipeline point");
  EXPECT_EQ(error_of([&] { (void)refit_bandwidth(pingpong, {{1000, 4.0}}, "t"); }),
            "a pipeline message of 1000 bytes took 4.00 us, no more than the link's latency of 5.00 us: no bandwidth "
            "to fit");
}

TEST(LinkFit, PipelineLinkFitsBothTermsToThePipelineMessages) {
  // Pipeline messages exactly 80 us + bytes at 6 GB/s (a fixed cost the idle
  // ping-pong's 1.5 us does not show): both terms come from them, the
  // ping-pong's points stay beside them.
  const Link pingpong = fit_link(exact_points(1.5, 12.0), "ping-pong");
  std::vector<LinkPoint> pipeline;
  for (const std::int64_t bytes : {std::int64_t{4} << 20, std::int64_t{1} << 20, std::int64_t{2} << 20}) {
    pipeline.push_back({bytes, 80.0 + static_cast<double>(bytes) / 6e3});
  }
  const Link link = fit_pipeline_link(pingpong, pipeline, "pipeline");
  EXPECT_NEAR(link.latency_us, 80.0, 1e-9);
  EXPECT_NEAR(link.bandwidth_GBps, 6.0, 1e-9);
  EXPECT_EQ(link.points, pingpong.points);
  ASSERT_EQ(link.pipeline_points.size(), 3u);
  EXPECT_EQ(link.pipeline_points.front().bytes, std::int64_t{1} << 20);  // sorted
  EXPECT_EQ(link.measured_with, "pipeline");
  EXPECT_NEAR(link_fit_max_relative_error(link), 0.0, 1e-12);
}

TEST(LinkFit, PipelineLinkKeepsThePingPongLatencyWhenTheFitFallsBelowIt) {
  // Messages with no fixed cost (exactly bytes at 4 GB/s) fit a latency of
  // 0, below the ping-pong's 1.5 us: the ping-pong's latency stays and the
  // bandwidth is refitted through it. Too small a per-byte cost, and one
  // size alone, do the same.
  const Link pingpong = fit_link(exact_points(1.5, 12.0), "ping-pong");
  const std::vector<LinkPoint> pipeline = {{1 << 20, (1 << 20) / 4e3}, {4 << 20, (4 << 20) / 4e3}};
  const Link link = fit_pipeline_link(pingpong, pipeline, "t");
  EXPECT_DOUBLE_EQ(link.latency_us, 1.5);
  EXPECT_EQ(link, refit_bandwidth(pingpong, pipeline, "t"));
  // Two tiny messages that take the same time fit no per-byte cost: an
  // endless bandwidth, above the ping-pong's, so refit_bandwidth's line.
  const std::vector<LinkPoint> tiny = {{64, 20.0}, {128, 20.0}};
  EXPECT_EQ(fit_pipeline_link(pingpong, tiny, "t"), refit_bandwidth(pingpong, tiny, "t"));
  const std::vector<LinkPoint> faster = {{64, 30.0}, {128, 20.0}};  // fewer bytes, slower: no bandwidth
  EXPECT_EQ(fit_pipeline_link(pingpong, faster, "t"), refit_bandwidth(pingpong, faster, "t"));
  const Link one = fit_pipeline_link(pingpong, {{1 << 20, 300.0}}, "t");
  EXPECT_DOUBLE_EQ(one.latency_us, 1.5);
  EXPECT_NEAR(one.bandwidth_GBps, (1 << 20) / (298.5 * 1e3), 1e-9);
}

// A collective's ring-form parameters from its times: t = steps x (a + S / (n B)).
TEST(CollectiveRingFit, TheLineOfTheTimesIsTheRingsStepsOverTheRanks) {
  using models::Collective;
  // 3 us at 1000 B and 5 us at 2000 B: the line 1 us + 0.002 us a byte (0.5 GB/s);
  // an all-gather over 2 has one step, so a = 1 us and B = 0.5 / 2 GB/s.
  const CollectiveLink gather = collective_ring_fit(Collective::all_gather, 2, {{1000, 3.0}, {2000, 5.0}});
  EXPECT_NEAR(gather.latency_us, 1.0, 1e-9);
  EXPECT_NEAR(gather.bandwidth_GBps, 0.25, 1e-12);
  EXPECT_EQ(collective_ns(Collective::all_gather, CollectiveAlgorithm::ring, 2, 1000, gather), 3'000);
  // One size, through the origin: 1000 B in 4 us is 0.25 GB/s; an all-reduce
  // over 4 takes 6 steps, so B = 0.25 x 6 / 4.
  const CollectiveLink reduce = collective_ring_fit(Collective::all_reduce, 4, {{1000, 4.0}, {1000, 4.0}});
  EXPECT_EQ(reduce.latency_us, 0.0);
  EXPECT_NEAR(reduce.bandwidth_GBps, 0.375, 1e-12);
  // The larger size faster (noise): the totals' line, 3000 B in 9 us.
  const CollectiveLink noisy = collective_ring_fit(Collective::reduce_scatter, 2, {{1000, 5.0}, {2000, 4.0}});
  EXPECT_EQ(noisy.latency_us, 0.0);
  EXPECT_NEAR(noisy.bandwidth_GBps, 3000.0 / 9 / 1e3 / 2, 1e-12);
  EXPECT_THROW((void)collective_ring_fit(Collective::all_gather, 1, {{1000, 3.0}}), InputError);
  EXPECT_THROW((void)collective_ring_fit(Collective::all_gather, 2, {}), InputError);
  EXPECT_THROW((void)collective_ring_fit(Collective::all_gather, 2, {{1000, 0.0}}), InputError);
}

TEST(LinkFit, MeasuredPointsSurviveWritingAndReading) {
  Profile profile = load_profile(std::filesystem::path(GPIPE_TEST_DATA_DIR) / "profiles" / "valid_two_layers.json");
  profile.link = fit_link(exact_points(3.0, 5.0), "MPI ping-pong between ranks 0 and 1 on one node (vm)");
  const auto path = std::filesystem::path(::testing::TempDir()) / "link_fit_round_trip.json";
  write_profile(profile, path);
  EXPECT_EQ(load_profile(path), profile);
  profile.link = refit_bandwidth(profile.link, {{1 << 20, 400.0}, {4 << 20, 1500.0}}, "ping-pong and pipeline");
  write_profile(profile, path);
  EXPECT_EQ(load_profile(path), profile);
}

}  // namespace
}  // namespace gpipe::profiles
