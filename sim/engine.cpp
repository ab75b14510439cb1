#include "sim/engine.hpp"

#include <string>
#include <utility>

#include "schedules/validate.hpp"
#include "sim/direct_replay.hpp"
#include "sim/fifo_replay.hpp"
#include "sim/overlap_model.hpp"
#include "sim/replay.hpp"
#include "sim/shared_replay.hpp"
#include "sim/stage_links.hpp"

namespace gpipe::sim {

RunError stalled(int rank, const schedules::Action& waits_at) {
  return RunError("simulation stalled: rank " + std::to_string(rank) + " waits at " + schedules::to_string(waits_at));
}

timelines::TimelineInfo simulated_info(const schedules::Schedule& schedule, const SimOptions& options) {
  timelines::TimelineInfo info = timelines::info_of(schedule);
  info.source = "sim";
  info.batch_size = options.batch_size;
  info.static_bytes = options.static_bytes;
  return info;
}

SimResult simulate(const schedules::Schedule& schedule, const CostModel& costs, const LinkModel& links,
                   const SimOptions& options) {
  if (options.validate) schedules::validate(schedule);
  validate_overlap_share(options.overlap_share);
  // A sweep's case, a million times: the same semantics without the graph,
  // for a model with a price table (CostModel::stage_prices).
  if (auto direct = try_direct_replay(schedule, costs, links, options)) return std::move(*direct);
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
