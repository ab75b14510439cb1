#include "sim/engine.hpp"

#include <utility>

#include "schedules/validate.hpp"
#include "sim/direct_replay.hpp"
#include "sim/fifo_replay.hpp"
#include "sim/overlap_model.hpp"
#include "sim/profile_costs.hpp"
#include "sim/replay.hpp"
#include "sim/shared_replay.hpp"
#include "sim/stage_links.hpp"

namespace gpipe::sim {

SimResult simulate(const schedules::Schedule& schedule, const CostModel& costs, const LinkModel& links,
                   const SimOptions& options) {
  if (options.validate) schedules::validate(schedule);
  validate_overlap_share(options.overlap_share);
  // A sweep's case, a million times: the same semantics without the graph.
  if (const auto* profile_costs = dynamic_cast<const ProfileCosts*>(&costs); profile_costs != nullptr) {
    if (auto direct = try_direct_replay(schedule, *profile_costs, links, options)) return std::move(*direct);
  }
  Replay replay(schedule, costs, options.record_timeline, options.overlap_share, ActionGraph::Edges::timing);
  const StageLinks stage_links(schedule, replay.graph(), costs, links);
  if (options.link_sharing == LinkSharing::shared) {
    replay_shared_links(replay, stage_links);
  } else {
    replay_fifo_links(replay, stage_links);
  }
  return replay.finish(schedule, options);
}

}  // namespace gpipe::sim
