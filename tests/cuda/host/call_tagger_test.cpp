// The profiler's call tagging against MockActivitySource: one fresh external
// id per call of a timed pass, pushed around the call and popped after it
// (also when the call throws), nothing pushed in untimed passes; and the ids
// lead layer_timings to each call's work.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "exec/cuda/cupti/mock_activity_source.hpp"
#include "exec/cuda/profiler/call_tagger.hpp"

namespace gpipe::exec::cuda::profiler {
namespace {

TEST(CallTagger, UntimedCallsPushNothing) {
  cupti::MockActivitySource source;
  CallTagger tagger;
  int ran = 0;
  tagger.run({0, 1, Phase::forward, -1}, [&] { ++ran; });
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(source.pushed().empty());
  EXPECT_TRUE(tagger.calls().empty());
}

TEST(CallTagger, EachTimedCallRunsUnderItsOwnId) {
  cupti::MockActivitySource source;
  CallTagger tagger;
  tagger.tag_with(&source);
  std::vector<std::size_t> depth_inside;
  const auto call = [&] { depth_inside.push_back(source.depth()); };
  tagger.run({0, 2, Phase::forward, 0}, call);
  tagger.run({1, 2, Phase::backward, 0}, call);
  tagger.run({1, 2, Phase::step, 0}, call);
  EXPECT_EQ(source.pushed(), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(depth_inside, (std::vector<std::size_t>{1, 1, 1}));
  EXPECT_EQ(source.depth(), 0U);
  const CallMap want = {{1, {0, 2, Phase::forward, 0}}, {2, {1, 2, Phase::backward, 0}}, {3, {1, 2, Phase::step, 0}}};
  EXPECT_EQ(tagger.calls(), want);

  tagger.tag_with(nullptr);
  tagger.run({0, 2, Phase::forward, 1}, call);
  EXPECT_EQ(source.pushed().size(), 3U);
}

TEST(CallTagger, AThrowingCallStillPops) {
  cupti::MockActivitySource source;
  CallTagger tagger;
  tagger.tag_with(&source);
  EXPECT_THROW(tagger.run({3, 1, Phase::backward, 0}, [] { throw std::runtime_error("kernel failed"); }),
               std::runtime_error);
  EXPECT_EQ(source.depth(), 0U);
  EXPECT_EQ(tagger.calls().size(), 1U);
}

TEST(CallTagger, IdsLeadLayerTimingsToTheirWork) {
  // What the GPU would report for two tagged calls: CUPTI links each runtime
  // call made under an id to that id (correlations 7 and 8).
  cupti::MockActivitySource source;
  CallTagger tagger;
  tagger.tag_with(&source);
  source.start();
  tagger.run({0, 1, Phase::forward, 0}, [] {});
  tagger.run({0, 1, Phase::backward, 0}, [] {});
  source.records.external = {{source.pushed()[0], 7}, {source.pushed()[1], 8}};
  source.records.kernels = {{.name = "f", .start_ns = 100, .end_ns = 350, .correlation = 7},
                            {.name = "b", .start_ns = 400, .end_ns = 1'000, .correlation = 8}};
  const LayerTimings t = layer_timings(source.stop(), tagger.calls());
  EXPECT_EQ(t.median_ns.at({0, 1, Phase::forward}), 250.0);
  EXPECT_EQ(t.median_ns.at({0, 1, Phase::backward}), 600.0);
}

}  // namespace
}  // namespace gpipe::exec::cuda::profiler
