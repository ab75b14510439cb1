// The engine's dependency graph against lowering and the dependency rules.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "schedules/dependencies.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "sim/action_graph.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::RecomputePolicy;
using schedules::Schedule;

// Every action's duration tells which it is: stage, kind and micro-batch.
class TaggedCosts final : public CostModel {
 public:
  std::int64_t duration_ns(const Action& a) const override {
    return a.stage.value * 1'000'000 + static_cast<int>(a.kind) * 10'000 + a.microbatch.value;
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
};

std::vector<Schedule> schedules_to_check() {
  std::vector<Schedule> out;
  for (const char* name : {"gpipe", "1f1b"}) {
    for (auto policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
      for (int k : {1, 2, 4}) {
        schedules::ScheduleOptions o;
        o.num_ranks = k;
        o.num_microbatches = 5;
        o.recompute = policy;
        out.push_back(schedules::generate(name, o));
        out.push_back(schedules::lower(out.back()));  // already lowered: read as it is
      }
    }
  }
  return out;
}

std::string describe(const Schedule& s) {
  return s.name + " K=" + std::to_string(s.num_stages) + " " + std::string(to_string(s.recompute)) +
         (s.is_lowered() ? " lowered" : "");
}

TEST(ActionGraph, NodesAreTheLoweredComputeProgramRankAfterRank) {
  const TaggedCosts costs;
  for (const Schedule& s : schedules_to_check()) {
    const ActionGraph graph(s, costs);
    const Schedule lowered = schedules::lower(s);
    std::size_t messages = 0;
    for (int r = 0; r < s.num_ranks; ++r) {
      std::vector<Action> expected, got;
      for (const Action& a : lowered.ranks[static_cast<std::size_t>(r)]) {
        if (!schedules::is_comm(a.kind)) expected.push_back(a);
        if (a.kind == ActionKind::SEND_F || a.kind == ActionKind::SEND_B) ++messages;
      }
      for (int i = graph.rank_begin(r); i < graph.rank_end(r); ++i) {
        const auto n = static_cast<std::size_t>(i);
        got.push_back(graph.action(n));
        EXPECT_EQ(graph.rank(n), r);
        EXPECT_EQ(graph.duration_ns(n), costs.duration_ns(graph.action(n)));
      }
      EXPECT_EQ(got, expected) << describe(s) << " rank " << r;
    }
    EXPECT_EQ(graph.size(), static_cast<std::size_t>(graph.rank_end(s.num_ranks - 1)));
    EXPECT_EQ(graph.num_messages(), messages) << describe(s);
  }
}

TEST(ActionGraph, ConsumersFollowTheDependencyRulesInlineOrOverflowing) {
  const TaggedCosts costs;
  for (const Schedule& s : schedules_to_check()) {
    for (int inline_edges : {ActionGraph::kInlineEdges, 1}) {  // 1: most edges overflow
      ActionGraph graph(s, costs, inline_edges);
      std::map<Action, int> node;
      for (std::size_t i = 0; i < graph.size(); ++i) node[graph.action(i)] = static_cast<int>(i);
      const auto contains = [&](const Action& a) { return node.contains(a); };
      std::vector<std::vector<int>> expected(graph.size());
      std::vector<int> inputs(graph.size(), 0);
      for (std::size_t c = 0; c < graph.size(); ++c) {
        schedules::for_each_dependency(s, false, graph.action(c), contains, [&](const Action& dep) {
          expected[static_cast<std::size_t>(node.at(dep))].push_back(static_cast<int>(c));
          ++inputs[c];
        });
      }
      const auto counts = graph.take_inputs();
      for (std::size_t p = 0; p < graph.size(); ++p) {
        std::vector<int> got;
        graph.for_each_consumer(static_cast<int>(p), [&](int c) { got.push_back(c); });
        EXPECT_EQ(got, expected[p]) << describe(s) << " " << schedules::to_string(graph.action(p));
        EXPECT_EQ(counts[p], inputs[p]);
      }
    }
  }
}

TEST(ActionGraph, RecomputedAsksForR) {
  schedules::ScheduleOptions o;
  o.num_ranks = 2;
  o.num_microbatches = 2;
  o.recompute = RecomputePolicy::stage_except_last;
  const ActionGraph graph(schedules::generate("1f1b", o), TaggedCosts());
  // 1F1B's last stage runs B right after F with except_last: no R there.
  EXPECT_FALSE(graph.recomputed(schedules::parse_action("1F0")));
  EXPECT_TRUE(graph.recomputed(schedules::parse_action("0F0")));
}

}  // namespace
}  // namespace gpipe::sim
