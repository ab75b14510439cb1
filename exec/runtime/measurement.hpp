// What the workers of a run measured, turned into the run's result. Each rank
// placed in this process gives a part: its static bytes and, per measured
// step, its actions' intervals and its memory changes (with one rank per
// process the parts travel to the reporter: exec/dist/rank_part.hpp). From
// every rank's part, each measured step becomes a Timeline
// (step_timeline.hpp), and the one of median step time is the run's.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/memory_log.hpp"
#include "exec/runtime/step_timeline.hpp"
#include "exec/runtime/train_options.hpp"
#include "schedules/action.hpp"
#include "schedules/ids.hpp"
#include "schedules/schedule.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec {

struct RankPart {
  schedules::Rank rank;
  std::int64_t static_bytes = 0;
  struct Step {
    std::vector<std::pair<schedules::Action, Interval>> intervals;
    // Its data-parallel reductions (REDUCE_GRAD on the reduce stream).
    std::vector<std::pair<schedules::Action, Interval>> reductions;
    // Its tensor-parallel collectives, inside its compute actions.
    std::vector<timelines::CollectiveSpan> collectives;
    std::vector<MemoryChange> memory;
    bool operator==(const Step&) const = default;
  };
  std::vector<Step> steps;  // per measured step
  bool operator==(const RankPart&) const = default;
};

// The parts of the ranks `local`, from the run's timer, their memory logs
// (indexed by rank) and their static bytes (indexed by rank).
[[nodiscard]] std::vector<RankPart> local_parts(ActionTimer& timer,
                                                const std::vector<std::unique_ptr<MemoryLog>>& logs,
                                                const std::vector<schedules::Rank>& local,
                                                const std::vector<std::int64_t>& static_bytes,
                                                int measured_steps);

// From every rank's part: result.timeline (the measured step of median time,
// described by `info`, whose static bytes come from the parts),
// result.timeline_step, result.step_times_ns and result.metrics. Returns the median's measured step
// (0: the first measured). `steps` is the run's step count.
int assemble_timeline(TrainResult& result, const std::vector<RankPart>& parts,
                      const schedules::Schedule& lowered, timelines::TimelineInfo info,
                      MemoryPlacement placement, int steps);

}  // namespace gpipe::exec
