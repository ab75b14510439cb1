// The engine replays on the graph's timing edges (ActionGraph::Edges::timing,
// no input made earlier on the consumer's own rank): the same timeline, memory
// samples and metrics, to the ns and in the same order, as with every edge,
// for every family and recompute policy, both link sharings, and torch's
// files with their send waits and overlapped pairs.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "base/files.hpp"
#include "interop/schedule_file.hpp"
#include "schedules/generate.hpp"
#include "sim/fifo_replay.hpp"
#include "sim/replay.hpp"
#include "sim/shared_replay.hpp"
#include "sim/stage_links.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;

// Every action its own duration, every stage and micro-batch its own bytes,
// so that no two orders of events could give the same times by chance.
class DistinctCosts final : public CostModel {
 public:
  std::int64_t duration_ns(const Action& a) const override {
    if (schedules::is_housekeeping(a.kind)) return 7;
    return 100 + 37 * a.stage.value + 11 * static_cast<int>(a.kind) + 3 * a.microbatch.value;
  }
  std::int64_t boundary_bytes(schedules::Stage s, schedules::Microbatch m) const override {
    return 50 + 5 * s.value + m.value % 3;
  }
  std::int64_t activation_bytes(schedules::Stage s, schedules::Microbatch m) const override {
    return 1000 + 10 * s.value + m.value;
  }
  std::int64_t stashed_input_bytes(schedules::Stage s, schedules::Microbatch) const override {
    return 100 + s.value;
  }
  std::int64_t weight_grad_stash_bytes(schedules::Stage s, schedules::Microbatch) const override {
    return 400 + s.value;
  }
};

// A price that depends on the link: from * 1000 + to * 100 + bytes.
class DistinctLinks final : public LinkModel {
 public:
  std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to, std::int64_t bytes) const override {
    return from.value * 1000 + to.value * 100 + bytes;
  }
};

SimResult replayed(const Schedule& s, LinkSharing sharing, std::optional<double> overlap, ActionGraph::Edges edges) {
  const DistinctCosts costs;
  const DistinctLinks link_model;  // named: StageLinks keeps a reference to it
  Replay replay(s, costs, /*record=*/true, overlap, edges);
  const StageLinks links(s, replay.graph(), costs, link_model);
  if (sharing == LinkSharing::shared) {
    replay_shared_links(replay, links);
  } else {
    replay_fifo_links(replay, links);
  }
  SimOptions options;
  options.batch_size = 16;
  return replay.finish(s, options);
}

std::size_t edges_of(const Schedule& s, ActionGraph::Edges edges) {
  const ActionGraph graph(s, DistinctCosts(), ActionGraph::kInlineEdges, std::nullopt, edges);
  std::size_t n = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) graph.for_each_consumer(static_cast<int>(i), [&](int) { ++n; });
  return n;
}

void expect_same_replays(const Schedule& s, const std::string& what, std::optional<double> overlap = std::nullopt) {
  for (const LinkSharing sharing : {LinkSharing::fifo, LinkSharing::shared}) {
    const SimResult all = replayed(s, sharing, overlap, ActionGraph::Edges::all);
    const SimResult timing = replayed(s, sharing, overlap, ActionGraph::Edges::timing);
    EXPECT_EQ(timing.timeline.actions, all.timeline.actions) << what << " " << to_string(sharing);
    EXPECT_EQ(timing.timeline.memory, all.timeline.memory) << what << " " << to_string(sharing);
    EXPECT_EQ(timing.metrics, all.metrics) << what << " " << to_string(sharing);
  }
}

TEST(TimingEdges, EveryFamilyRunsAsWithEveryEdge) {
  int checked = 0;
  for (const std::string& name : schedules::schedule_names()) {
    for (const auto policy : {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage,
                              schedules::RecomputePolicy::stage_except_last}) {
      for (const int k : {1, 2, 3, 4}) {
        for (const int m : {1, 2, 3, 4, 8}) {
          schedules::ScheduleOptions o;
          o.num_ranks = k;
          o.num_microbatches = m;
          o.recompute = policy;
          Schedule s;
          try {
            s = schedules::generate(name, o);
          } catch (const InputError&) {
            continue;  // a configuration the family refuses
          }
          expect_same_replays(s, name + " " + std::string(to_string(policy)) + " K=" + std::to_string(k) +
                                     " M=" + std::to_string(m));
          EXPECT_LT(edges_of(s, ActionGraph::Edges::timing), edges_of(s, ActionGraph::Edges::all));
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(TimingEdges, TorchFilesWithSendWaitsAndOverlappedPairs) {
  const std::filesystem::path dir = std::filesystem::path(GPIPE_TEST_DATA_DIR) / "torch_csv";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    const Schedule s = interop::read_schedule_file(entry.path());
    expect_same_replays(s, entry.path().filename().string());
    if (!s.overlapped.empty()) expect_same_replays(s, entry.path().filename().string() + " overlapped", 0.7);
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

}  // namespace
}  // namespace gpipe::sim
