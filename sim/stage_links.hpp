// The directed rank-to-rank links a schedule's messages travel on, and the
// price of each message. Data crosses ranks only between neighbouring stages:
// an activation from stage s to s+1, a gradient back from s+1 to s, carrying
// the boundary bytes of stage s (CostModel::boundary_bytes). Each stage
// boundary whose two stages sit on different ranks gets a link each way; two
// boundaries between the same pair of ranks share it. Stages on one rank
// exchange for free, on no link. A tied embedding's gradient
// (schedules/tied_gradient.hpp) travels between the first stage's rank and
// the last's on a link of its own each way, its bytes
// CostModel::tied_gradient_bytes. With data parallelism each rank has a
// reduce stream, a link from the rank to itself, on which its stages'
// reductions over their data-parallel groups run one after another, each
// CostModel::gradient_reduction_ns long.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/action_graph.hpp"
#include "sim/cost_model.hpp"
#include "sim/link_model.hpp"

namespace gpipe::sim {

// Which link each stage boundary's messages take: the activations forward
// from s to s+1, the gradients back (-1 where both stages share a rank); and
// each link's ends, numbered in order of the first boundary that crosses them.
struct LinkLayout {
  std::vector<int> forward, backward;      // per stage boundary
  std::vector<std::pair<int, int>> ends;   // per link: (from rank, to rank)
  // A tied embedding's gradient: from the first stage's rank to the last's,
  // and back; -1 without one or where one rank holds both stages.
  int tied_down = -1, tied_up = -1;
  // With data parallelism (Schedule::data_parallel > 1): each rank's reduce
  // stream; empty without.
  std::vector<int> reduction;
};
[[nodiscard]] LinkLayout link_layout(const schedules::Schedule& schedule);

class StageLinks {
 public:
  // `graph`, `costs` and `links` must outlive it: it keeps references to
  // them. One replay's: message() keeps the last price per link.
  StageLinks(const schedules::Schedule& schedule, const ActionGraph& graph, const CostModel& costs,
             const LinkModel& links);
  // A temporary for any of the three is refused: it would be destroyed at the
  // end of the declaration, and message() would then call a destroyed model
  // (`StageLinks links(s, graph, costs, UniformLink(...));`). Name it first.
  template <class Graph, class Costs, class Links>
    requires(!(std::is_lvalue_reference_v<Graph> && std::is_lvalue_reference_v<Costs> &&
               std::is_lvalue_reference_v<Links>))
  StageLinks(const schedules::Schedule& schedule, Graph&& graph, Costs&& costs, Links&& links) = delete;

  [[nodiscard]] std::size_t size() const { return layout_.ends.size(); }
  // What the link takes for a message of no bytes: its latency (a reduce
  // stream's: 0, its reductions priced whole).
  [[nodiscard]] std::int64_t latency_ns(int link) const;

  struct Message {
    int link;
    std::int64_t transfer_ns;  // alone on the link
  };
  // The message from node `producer` to node `consumer`, on different ranks.
  [[nodiscard]] Message message(int producer, int consumer) const {
    const schedules::Action& dep = graph_.action(static_cast<std::size_t>(producer));
    if (dep.kind == schedules::ActionKind::REDUCE_GRAD) [[unlikely]] return reduction_message(producer, consumer);
    const bool forward = dep.kind == schedules::ActionKind::F;
    const schedules::Stage boundary = forward ? dep.stage : graph_.action(static_cast<std::size_t>(consumer)).stage;
    const int link = (forward ? layout_.forward : layout_.backward)[boundary.at()];
    const std::int64_t bytes = costs_.boundary_bytes(boundary, dep.microbatch);
    Price& last = last_price_[static_cast<std::size_t>(link)];
    if (last.bytes != bytes) {
      const schedules::Rank from{graph_.rank(static_cast<std::size_t>(producer))};
      const schedules::Rank to{graph_.rank(static_cast<std::size_t>(consumer))};
      last = {bytes, links_.transfer_ns(from, to, bytes)};
    }
    return {link, last.ns};
  }

 private:
  // The last price asked of the link model on a link. The model prices a
  // message by its ends and bytes alone (link_model.hpp), and most messages
  // on a link carry the bytes of the one before (a plan has at most two
  // micro-batch sizes), so the engine asks it about once per link, not once
  // per message: a sweep spent a tenth of its time there.
  struct Price {
    std::int64_t bytes = -1;
    std::int64_t ns = 0;
  };

  // From REDUCE_GRAD(s): the stage's own reduction (to its WAIT_REDUCE_GRAD)
  // on the rank's reduce stream, or the tied embedding's gradient to its
  // partner's WAIT_REDUCE_GRAD.
  [[nodiscard]] Message reduction_message(int producer, int consumer) const;

  const ActionGraph& graph_;
  const CostModel& costs_;
  const LinkModel& links_;
  LinkLayout layout_;
  mutable std::vector<Price> last_price_;  // per link
};

}  // namespace gpipe::sim
