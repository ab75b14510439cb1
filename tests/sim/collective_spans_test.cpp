// The tensor- and context-parallel collectives a prediction puts inside its
// compute actions (sim/collective_spans.hpp), in exact nanoseconds: each
// layer's collectives of the pass, priced by the ring or tree closed form
// over their group's GPUs and link, end where the layer's profiled share of
// the action ends; layers run in order in F and in reverse in B; STEP and
// transfers have none.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "models/model.hpp"
#include "profiles/profile.hpp"
#include "schedules/action.hpp"
#include "sim/collective_spans.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {
namespace {

using timelines::CollectiveSpan;
using schedules::parse_action;
using schedules::Rank;
using timelines::Stream;
using timelines::TimedAction;

// Two blocks on one stage, split over 2 GPUs: each all-reduces 1000
// elements a sample in its forward and in its input gradient's pass.
models::Model two_blocks() {
  models::Model m;
  m.tensor_parallel = 2;
  for (int l = 0; l < 2; ++l) {
    models::Layer layer;
    layer.name = "block" + std::to_string(l);
    layer.collectives = {{.pass = models::TensorParallelPass::forward, .elems = 1000},
                         {.pass = models::TensorParallelPass::input, .elems = 1000}};
    m.layers.push_back(layer);
  }
  return m;
}

// Block 0 takes 30 us forward and 10 us backward, block 1 10 and 10, at b = 1.
profiles::Profile two_block_profile() {
  profiles::Profile p;
  p.tensor_parallel = 2;
  p.dtype = "fp32";
  for (const double fwd : {30.0, 10.0}) {
    profiles::LayerProfile layer;
    layer.name = "block";
    layer.samples = {{.micro_batch_size = 1, .fwd_us = fwd, .bwd_us = 10}};
    p.layers.push_back(layer);
  }
  return p;
}

TimedAction at(const char* action, std::int64_t start, std::int64_t end, Stream stream = Stream::compute) {
  return {parse_action(action), Rank{0}, stream, start, end};
}

TEST(CollectiveSpans, EachLayersCollectivesEndWhereItsShareOfTheActionEnds) {
  timelines::Timeline tl;
  tl.actions = {at("0F0", 1'000, 41'000), at("0B0", 50'000, 70'000), at("0STEP", 70'000, 71'000)};
  // 4000 bytes over 2 ranks, 1 us a step, 1 GB/s: ring 2 (1 + 4000 / 2e3) us =
  // 6 us; tree 2 x 1 + 2 x 4 = 10 us. The ring's 6000 ns.
  add_collective_spans(tl, two_block_profile(), two_blocks(), std::vector<int>{2}, std::vector<int>{1},
                       {.tensor = {.latency_us = 1, .bandwidth_GBps = 1}});
  const auto span = [](const char* within, std::int64_t start, std::int64_t end) {
    return CollectiveSpan{Rank{0}, parse_action(within), "all-reduce", 4000, start, end};
  };
  // F: block 0 has 30 of 40 us, so it ends at 1000 + 30000; block 1 at 41000.
  // B: block 1 first, 10 of 20 us, ending at 60000; block 0 at 70000.
  EXPECT_EQ(tl.collectives, (std::vector<CollectiveSpan>{span("0F0", 25'000, 31'000), span("0F0", 35'000, 41'000),
                                                         span("0B0", 54'000, 60'000), span("0B0", 64'000, 70'000)}));
  EXPECT_EQ(tl.info.tensor_parallel, 2);
}

TEST(CollectiveSpans, MicroBatchSizeScalesTheBytesAndSplitPassesTakeTheirOwn) {
  timelines::Timeline tl;
  tl.actions = {at("0I1", 0, 40'000), at("0W1", 40'000, 80'000)};
  profiles::Profile p = two_block_profile();
  for (auto& layer : p.layers) layer.samples = {{.micro_batch_size = 2, .fwd_us = 1, .bwd_us = 2}};
  // Block 0 also gathers 1000 elements again in its weight gradient (as sequence parallelism's W does).
  models::Model model = two_blocks();
  model.layers[0].collectives.push_back(
      {.pass = models::TensorParallelPass::weight, .collective = models::Collective::all_gather, .elems = 1000});
  // No split times in the profile: I shares the layers by bwd_us, W (no bwd_weight_us) evenly.
  add_collective_spans(tl, p, model, std::vector<int>{2}, std::vector<int>{1, 2},
                       {.tensor = {.latency_us = 0, .bandwidth_GBps = 8}});
  // 8000 bytes over 2 at 8 GB/s: the ring's all-reduce 2 x 4000 / 8e9 s = 1000 ns, its all-gather
  // 4000 / 8e9 s = 500 ns. In W, block 1 (none) runs first and block 0 ends the action.
  ASSERT_EQ(tl.collectives.size(), 3U);
  EXPECT_EQ(tl.collectives[0], (CollectiveSpan{Rank{0}, parse_action("0I1"), "all-reduce", 8000, 19'000, 20'000}));
  EXPECT_EQ(tl.collectives[1], (CollectiveSpan{Rank{0}, parse_action("0I1"), "all-reduce", 8000, 39'000, 40'000}));
  EXPECT_EQ(tl.collectives[2], (CollectiveSpan{Rank{0}, parse_action("0W1"), "all-gather", 8000, 79'500, 80'000}));
}

TEST(CollectiveSpans, CollectivesLongerThanTheirShareStayInsideTheAction) {
  timelines::Timeline tl;
  tl.actions = {at("0F0", 1'000, 9'000)};  // 8 us for two blocks' forwards and their 6 us all-reduces
  add_collective_spans(tl, two_block_profile(), two_blocks(), std::vector<int>{2}, std::vector<int>{1},
                       {.tensor = {.latency_us = 1, .bandwidth_GBps = 1}});
  // Block 0 ends at 1000 + 6000 (30 of 40 us): its span [1000, 7000), not before the action;
  // block 1's starts where that ends and is cut at the action's end.
  ASSERT_EQ(tl.collectives.size(), 2U);
  EXPECT_EQ(tl.collectives[0].start_ns, 1'000);
  EXPECT_EQ(tl.collectives[0].end_ns, 7'000);
  EXPECT_EQ(tl.collectives[1].start_ns, 7'000);
  EXPECT_EQ(tl.collectives[1].end_ns, 9'000);
}

// One block of 4 GPUs: T = 2 parts, each with C = 2 members. Its forward
// all-reduces 1000 elements over the parts and all-gathers 1000 over the
// members; its backward all-gathers them again and reduce-scatters their
// gradients, each priced over C = 2 on the context group's links.
TEST(CollectiveSpans, ContextCollectivesGoOnTheirOwnGroupAndLinks) {
  models::Model model = two_blocks();
  model.layers.resize(1);
  model.context_parallel = 2;
  using models::Collective;
  using models::CollectiveGroup;
  using models::TensorParallelPass;
  for (const auto& [pass, collective] :
       {std::pair{TensorParallelPass::forward, Collective::all_gather},
        std::pair{TensorParallelPass::input, Collective::all_gather},
        std::pair{TensorParallelPass::input, Collective::reduce_scatter}}) {
    model.layers[0].collectives.push_back(
        {.pass = pass, .collective = collective, .elems = 1000, .group = CollectiveGroup::context});
  }
  profiles::Profile p = two_block_profile();
  p.layers.resize(1);
  p.context_parallel = 2;
  timelines::Timeline tl;
  tl.actions = {at("0F0", 0, 40'000), at("0B0", 40'000, 80'000)};
  // 4000 bytes over 2 at 4 GB/s, no latency: the tensor group's all-reduce
  // 2 x 2000 / 4e9 s = 1000 ns. The context group's all-gather at its own fit
  // of 1 GB/s: 2000 / 1e9 s = 2000 ns; its reduce-scatter on the group's link
  // (no fit of its own) at 2 GB/s: 1000 ns.
  add_collective_spans(tl, p, model, std::vector<int>{1}, std::vector<int>{1},
                       {.tensor = {.latency_us = 0, .bandwidth_GBps = 4},
                        .context = {.latency_us = 0, .bandwidth_GBps = 2},
                        .context_all_gather = profiles::CollectiveLink{.latency_us = 0, .bandwidth_GBps = 1}});
  using timelines::CollectiveGroup::context;
  using timelines::CollectiveGroup::tensor;
  const auto span = [](const char* within, const char* what, std::int64_t start, std::int64_t end,
                       timelines::CollectiveGroup group) {
    return CollectiveSpan{Rank{0}, parse_action(within), what, 4000, start, end, group};
  };
  // In each action the layer's collectives end together at its end, in the model's order.
  EXPECT_EQ(tl.collectives, (std::vector<CollectiveSpan>{
                                span("0F0", "all-reduce", 37'000, 38'000, tensor),
                                span("0F0", "all-gather", 38'000, 40'000, context),
                                span("0B0", "all-reduce", 76'000, 77'000, tensor),
                                span("0B0", "all-gather", 77'000, 79'000, context),
                                span("0B0", "reduce-scatter", 79'000, 80'000, context)}));
  EXPECT_EQ(tl.info.tensor_parallel, 2);
  EXPECT_EQ(tl.info.context_parallel, 2);
}

TEST(CollectiveSpans, OneGpuAStageHasNone) {
  timelines::Timeline tl;
  tl.actions = {at("0F0", 0, 10)};
  profiles::Profile p = two_block_profile();
  p.tensor_parallel = 1;
  add_collective_spans(tl, p, two_blocks(), std::vector<int>{2}, std::vector<int>{1}, {});
  EXPECT_TRUE(tl.collectives.empty());
  EXPECT_EQ(tl.info.tensor_parallel, 1);
}

}  // namespace
}  // namespace gpipe::sim
