// The inference replay: a workload (workload.hpp) of R items through K
// stages, one per rank, forward only, exact to the ns. In item order:
//   admitted(r)  = max(arrival(r), completed(r - B))        (r >= B; else arrival(r))
//   F(s, r)      starts at max(its input's arrival, the end of F(s, r - 1)),
//                its input being the admission for s = 0 and the message
//                from stage s - 1 otherwise, and takes the cost model's F;
//   message      s -> s+1 of item r starts at max(end of F(s, r), end of the
//                link's previous message) and takes the link model's time
//                for the stage's boundary bytes (a FIFO per link, as in training);
//   completed(r) = end of F(K - 1, r).
// In the closed loop an item arrives when it is admitted, so its latency
// is its time in the pipeline; in the open loop it includes the wait.
// Sends do not hold the compute stream, as in training. Since every stage
// runs its items in order and every link is a FIFO, items complete in order,
// and "fewer than B in flight" is exactly "item r - B has completed".
//
// Memory of a rank (its activation bytes, docs/design.md "Inference"): from the
// stream's start, the state its layers keep for each of the min(B, R)
// streams in flight (the profile's state_bytes); an item's input from the
// arrival of its message until its forward ends (stage 0's input is the
// request, held by the caller, and not counted); its output from the start of
// its forward until its send starts (the last stage's until its forward
// ends). A message in flight is charged to no rank, as in training's links.
// Frees at an instant are applied before allocations at that instant.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "schedules/serving_workload.hpp"
#include "sim/cost_model.hpp"
#include "sim/link_model.hpp"
#include "timelines/serving_run.hpp"

namespace gpipe::sim::inference {

using timelines::ItemTimes;
using schedules::Workload;
using schedules::arrival_times_ns;
using schedules::validate_workload;
using schedules::kMaxForwards;
using timelines::ServingRun;

// `state_bytes[s]`: the state stage s keeps for one stream (empty: none).
// Throws InputError for a workload validate() refuses or R x K past
// kMaxForwards, and std::invalid_argument
// for num_stages < 1 or state_bytes of the wrong length.
[[nodiscard]] ServingRun replay(const CostModel& costs, const LinkModel& links, int num_stages, const Workload& workload,
                         std::span<const std::int64_t> state_bytes, bool record);

}  // namespace gpipe::sim::inference
