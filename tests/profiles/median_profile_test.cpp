// The median of profiles: every time is its own median over the profiles
// (exact on these values), everything else is the first's, and profiles of
// different layers or sizes are refused with one line.
#include "profiles/median_profile.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

using testing::error_of;

// A small profile with split backwards, its times scaled by `scale`.
Profile scaled(double scale) {
  Profile p;
  p.source = "cpu";
  p.device = "test";
  p.dtype = "fp32";
  LayerProfile layer;
  layer.name = "block0";
  layer.kind = "mlp_block";
  layer.param_bytes = 64;
  layer.optimizer_us = 2 * scale;
  for (const int b : {1, 2}) {
    layer.samples.push_back({.micro_batch_size = b,
                             .fwd_us = 10 * b * scale,
                             .bwd_us = 20 * b * scale,
                             .bwd_input_us = 12 * b * scale,
                             .bwd_weight_us = 8 * b * scale,
                             .input_bytes = 16L * b,
                             .output_bytes = 16L * b,
                             .activation_bytes = 32L * b});
  }
  p.layers = {layer, layer};
  p.layers[1].name = "block1";
  return p;
}

TEST(MedianProfile, EachTimeIsItsMedianAndTheRestTheFirsts) {
  const Profile slow = scaled(1.3);
  const Profile median = median_profile({scaled(1.0), slow, scaled(0.5)});
  for (const LayerProfile& layer : median.layers) {
    EXPECT_DOUBLE_EQ(layer.optimizer_us, 2.0);
    for (const ProfileSample& s : layer.samples) {
      EXPECT_DOUBLE_EQ(s.fwd_us, 10.0 * s.micro_batch_size);
      EXPECT_DOUBLE_EQ(s.bwd_us, 20.0 * s.micro_batch_size);
      EXPECT_DOUBLE_EQ(*s.bwd_input_us, 12.0 * s.micro_batch_size);
      EXPECT_DOUBLE_EQ(*s.bwd_weight_us, 8.0 * s.micro_batch_size);
      EXPECT_EQ(s.activation_bytes, 32 * s.micro_batch_size);
    }
  }
  // Contention points too, slowdown by slowdown.
  std::vector<Profile> three = {scaled(1.0), scaled(1.0), scaled(1.0)};
  for (std::size_t i = 0; i < 3; ++i) three[i].contention = {{1, 0.01 * static_cast<double>(3 - i)}};
  EXPECT_EQ(median_profile(three).contention, (std::vector<ContentionPoint>{{1, 0.02}}));
  three[2].contention = {{2, 0.01}};
  EXPECT_EQ(error_of([&] { (void)median_profile(three); }),
            "profile 2 of a median differs from the first in its contention points");
  // Two: the mean of both; one: itself.
  EXPECT_DOUBLE_EQ(median_profile({scaled(1.0), scaled(0.5)}).layers[0].samples[1].fwd_us, 15.0);
  EXPECT_EQ(median_profile({slow}), slow);
}

// A link measured in three rounds: latency, bandwidth and each point their
// median; points of other sizes leave the first's; how it was measured, the first's.
TEST(MedianProfile, TheLinkIsTheMedianOfTheRounds) {
  std::vector<Profile> three = {scaled(1.0), scaled(1.0), scaled(1.0)};
  const double latency[] = {30.0, 50.0, 10.0};
  const double bandwidth[] = {4.0, 5.0, 6.5};
  for (std::size_t i = 0; i < 3; ++i) {
    Link& link = three[i].link;
    link.latency_us = latency[i];
    link.bandwidth_GBps = bandwidth[i];
    link.measured_with = "round " + std::to_string(i);
    link.points = {{1024, 2.0 + static_cast<double>(i)}, {1 << 20, 300.0 - 10 * static_cast<double>(i)}};
    link.pipeline_points = {{1 << 20, 400.0 + (i == 1 ? 100.0 : 0.0)}};
  }
  three[2].link.pipeline_points = {{2 << 20, 700.0}};  // another size: the first's points stand
  const Link median = median_profile(three).link;
  EXPECT_DOUBLE_EQ(median.latency_us, 30.0);
  EXPECT_DOUBLE_EQ(median.bandwidth_GBps, 5.0);
  EXPECT_EQ(median.points, (std::vector<LinkPoint>{{1024, 3.0}, {1 << 20, 290.0}}));
  EXPECT_EQ(median.pipeline_points, (std::vector<LinkPoint>{{1 << 20, 400.0}}));
  EXPECT_EQ(median.measured_with, "round 0");
}

TEST(MedianProfile, EachCollectivesFitIsTheMedianWhereEveryRoundHasOne) {
  std::vector<Profile> three = {scaled(1.0), scaled(1.0), scaled(1.0)};
  const double latency[] = {8.0, 2.0, 5.0};
  const double bandwidth[] = {1.0, 3.0, 2.5};
  for (std::size_t i = 0; i < 3; ++i) {
    three[i].link.tensor_all_reduce = CollectiveLink{.latency_us = latency[i], .bandwidth_GBps = bandwidth[i]};
    three[i].link.context_all_gather = CollectiveLink{.latency_us = latency[i], .bandwidth_GBps = bandwidth[i]};
  }
  three[1].link.context_all_gather.reset();  // one round without it: the first's stands
  const Link median = median_profile(three).link;
  EXPECT_EQ(median.tensor_all_reduce, (CollectiveLink{.latency_us = 5.0, .bandwidth_GBps = 2.5}));
  EXPECT_EQ(median.context_all_gather, (CollectiveLink{.latency_us = 8.0, .bandwidth_GBps = 1.0}));
  EXPECT_FALSE(median.collective.has_value());
}

TEST(MedianProfile, RefusesProfilesThatDoNotMatch) {
  EXPECT_EQ(error_of([] { (void)median_profile({}); }), "a median of profiles needs at least one");
  Profile fewer = scaled(1.0);
  fewer.layers.pop_back();
  EXPECT_EQ(error_of([&] { (void)median_profile({scaled(1.0), fewer}); }),
            "profile 1 of a median differs from the first in its number of layers");
  Profile other_size = scaled(1.0);
  other_size.layers[1].samples[1].micro_batch_size = 4;
  EXPECT_EQ(error_of([&] { (void)median_profile({scaled(1.0), scaled(2.0), other_size}); }),
            "profile 2 of a median differs from the first in layer block1 at micro-batch size 2");
}

}  // namespace
}  // namespace gpipe::profiles
