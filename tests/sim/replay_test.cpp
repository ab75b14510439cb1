// The engine's pieces below simulate(), driven by hand with scripted costs and
// links, exact to the ns: StageLinks numbers the links and prices each
// message; Replay starts an action at max(its rank free, its last input in),
// hands its output to each consumer, and names the rank a stalled replay
// left waiting.
#include <gtest/gtest.h>

#include <tuple>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "sim/replay.hpp"
#include "sim/stage_links.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;

// F 100 ns, B 200 ns, STEP free; stage s sends 10 * (s + 1) bytes.
class ScriptedCosts final : public CostModel {
 public:
  std::int64_t duration_ns(const Action& a) const override {
    return a.kind == ActionKind::F ? 100 : a.kind == ActionKind::B ? 200 : 0;
  }
  std::int64_t boundary_bytes(schedules::Stage s, schedules::Microbatch) const override {
    return 10 * (s.value + 1);
  }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 1000; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
};

// A price that says which link it is: from * 1000 + to * 100 + bytes.
class ScriptedLinks final : public LinkModel {
 public:
  std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to, std::int64_t bytes) const override {
    return from.value * 1000 + to.value * 100 + bytes;
  }
};

schedules::Schedule generated_gpipe(int k, int m) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  return schedules::generate("gpipe", o);
}

int node_of(const ActionGraph& graph, const char* text) {
  const Action a = schedules::parse_action(text);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    if (graph.action(i) == a) return static_cast<int>(i);
  }
  throw std::runtime_error(std::string("no node ") + text);
}

TEST(StageLinks, OneLinkEachWayPerBoundaryPricedByItsBytes) {
  const schedules::Schedule s = generated_gpipe(3, 1);
  const ScriptedCosts costs;
  const ScriptedLinks links;
  const ActionGraph graph(s, costs);
  const StageLinks stage_links(s, graph, costs, links);
  ASSERT_EQ(stage_links.size(), 4u);  // 0->1, 1->0, 1->2, 2->1, in boundary order
  EXPECT_EQ(stage_links.latency_ns(0), 100);
  EXPECT_EQ(stage_links.latency_ns(1), 1000);
  EXPECT_EQ(stage_links.latency_ns(2), 1200);
  EXPECT_EQ(stage_links.latency_ns(3), 2100);
  const auto message = [&](const char* from, const char* to) {
    const StageLinks::Message m = stage_links.message(node_of(graph, from), node_of(graph, to));
    return std::tuple{m.link, m.transfer_ns};
  };
  EXPECT_EQ(message("0F0", "1F0"), std::tuple(0, 100 + 10));   // stage 0's activation
  EXPECT_EQ(message("1B0", "0B0"), std::tuple(1, 1000 + 10));  // its gradient, back
  EXPECT_EQ(message("1F0", "2F0"), std::tuple(2, 1200 + 20));
  EXPECT_EQ(message("2B0", "1B0"), std::tuple(3, 2100 + 20));
}

TEST(StageLinks, StagesOnOneRankHaveNoLink) {
  const schedules::Schedule s = generated_gpipe(1, 2);
  const ScriptedCosts costs;
  const ScriptedLinks links;
  const ActionGraph graph(s, costs);
  EXPECT_EQ(StageLinks(s, graph, costs, links).size(), 0u);
}

// StageLinks and Replay keep references to their models, so a temporary model,
// destroyed at the end of the declaration, does not compile (a StageLinks
// once priced every message with a destroyed link model).
static_assert(std::is_constructible_v<StageLinks, const schedules::Schedule&, const ActionGraph&,
                                      const ScriptedCosts&, const ScriptedLinks&>);
static_assert(!std::is_constructible_v<StageLinks, const schedules::Schedule&, const ActionGraph&,
                                       const ScriptedCosts&, ScriptedLinks>);
static_assert(!std::is_constructible_v<StageLinks, const schedules::Schedule&, const ActionGraph&,
                                       ScriptedCosts, const ScriptedLinks&>);
static_assert(!std::is_constructible_v<StageLinks, const schedules::Schedule&, ActionGraph,
                                       const ScriptedCosts&, const ScriptedLinks&>);
static_assert(!std::is_constructible_v<StageLinks, const schedules::Schedule&, ActionGraph, ScriptedCosts,
                                       ScriptedLinks>);
static_assert(std::is_constructible_v<Replay, const schedules::Schedule&, const ScriptedCosts&, bool>);
static_assert(!std::is_constructible_v<Replay, const schedules::Schedule&, ScriptedCosts, bool>);
static_assert(!std::is_constructible_v<Replay, const schedules::Schedule&, const ScriptedCosts, bool>);

// Micro-batches of two sizes, in turn: even ones send 10 bytes, odd ones 20.
class AlternatingBytes final : public CostModel {
 public:
  std::int64_t duration_ns(const Action&) const override { return 1; }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch m) const override {
    return m.value % 2 == 0 ? 10 : 20;
  }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
};

TEST(StageLinks, EachMessageHasThePriceOfItsOwnBytes) {
  // StageLinks keeps the last price per link: sizes in turn must not reuse a stale one.
  const schedules::Schedule s = generated_gpipe(2, 4);
  const AlternatingBytes costs;
  const ScriptedLinks links;
  const ActionGraph graph(s, costs);
  const StageLinks stage_links(s, graph, costs, links);
  const auto price = [&](const char* from, const char* to) {
    return stage_links.message(node_of(graph, from), node_of(graph, to)).transfer_ns;
  };
  EXPECT_EQ(price("0F0", "1F0"), 100 + 10);
  EXPECT_EQ(price("0F1", "1F1"), 100 + 20);
  EXPECT_EQ(price("0F2", "1F2"), 100 + 10);
  EXPECT_EQ(price("0F2", "1F2"), 100 + 10);
  EXPECT_EQ(price("1B3", "0B3"), 1000 + 20);  // the other way: its own link
  EXPECT_EQ(price("0F3", "1F3"), 100 + 20);
  EXPECT_EQ(price("1B1", "0B1"), 1000 + 20);
  EXPECT_EQ(price("1B0", "0B0"), 1000 + 10);
}

TEST(Replay, StartsWhenTheRankIsFreeAndTheLastInputIsIn) {
  const schedules::Schedule s = generated_gpipe(2, 1);
  const ScriptedCosts costs;
  Replay replay(s, costs, /*record=*/true);
  const ActionGraph& graph = replay.graph();
  const int f0 = node_of(graph, "0F0");
  const int f1 = node_of(graph, "1F0");
  ASSERT_EQ(replay.next(0), f0);
  ASSERT_TRUE(replay.inputs_delivered(static_cast<std::size_t>(f0)));
  ASSERT_FALSE(replay.inputs_delivered(static_cast<std::size_t>(f1)));

  const std::int64_t end = replay.start(0, static_cast<std::size_t>(f0));
  EXPECT_EQ(end, 100);
  std::vector<std::tuple<int, int, std::int64_t>> delivered;
  replay.end(0, static_cast<std::size_t>(f0), end,
             [&](int p, int c, std::int64_t at) { delivered.emplace_back(p, c, at); });
  // 0F0 feeds 1F0 (another rank) and 0B0 (its own backward), in node order.
  EXPECT_EQ(delivered, (std::vector<std::tuple<int, int, std::int64_t>>{
                           {f0, node_of(graph, "0B0"), 100}, {f0, f1, 100}}));
  EXPECT_EQ(replay.next(0), node_of(graph, "0B0"));

  // The activation arrives 50 ns later: 1F0 is its only wait, so it runs then.
  replay.transfer(f0, f1, 100, 150);
  EXPECT_TRUE(replay.arrive(f1, 150));
  EXPECT_EQ(replay.start(1, static_cast<std::size_t>(f1)), 250);

  // Rank 0 still waits at 0B0: a stall, named.
  try {
    (void)replay.finish(s, SimOptions{});
    FAIL() << "no stall reported";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "simulation stalled: rank 0 waits at 0B0");
  }
}

}  // namespace
}  // namespace gpipe::sim
