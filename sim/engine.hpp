// The discrete-event engine: replays a schedule against a cost model and a
// link model with docs/design.md's deterministic semantics, exact to the ns:
//   - each rank runs its compute actions in IR order on one compute stream; an
//     action starts when the previous one on its rank has ended and its inputs
//     are ready (schedules::for_each_dependency);
//   - data between stages on different ranks travels as a message on the
//     directed rank-to-rank link, a FIFO: it starts at max(end of the action
//     that produced it, end of the previous message on that link); stages on
//     the same rank exchange for free (SimOptions::link_sharing = shared
//     instead lets the messages on a link share its bandwidth);
//   - activation memory follows activation_memory.hpp;
//   - what torch's files add runs on the compute stream in program order:
//     housekeeping (UNSHARD, ...) costs what the cost model says (0 from a
//     profile), and WAIT_SEND_F/B(s,m) takes no time but cannot start before
//     the message of that send has arrived at its receiver; SEND and RECV are
//     posted without blocking, so where a file lists them changes nothing;
//   - overlapped pairs run per SimOptions::overlap_share (overlap_model.hpp).
// The schedule is validated and lowered first (R, STEP), so any valid IR runs,
// compute-only or lowered, generated or read from a file (torch's included).
// simulate() picks the replay for the link sharing: fifo_replay.hpp (a
// dataflow pass, no clock) or shared_replay.hpp (events in time order); both
// keep their books in a Replay (replay.hpp). For the metrics alone on FIFO
// links of a cost model with a price table (a profile's and its repricings
// per stage and kind: CostModel::stage_prices; a sweep's million runs) it
// takes direct_replay.hpp instead: the same rules without building the graph.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/error.hpp"
#include "schedules/schedule.hpp"
#include "sim/cost_model.hpp"
#include "sim/link_model.hpp"
#include "timelines/metrics.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

struct SimOptions {
  std::int64_t batch_size = 0;             // samples per mini-batch, for throughput
  std::vector<std::int64_t> static_bytes;  // per rank: parameters, gradients, optimizer state
  // Record every action and memory change (for traces and plots). A sweep
  // needs only the metrics, which the engine then keeps as running totals.
  bool record_timeline = true;
  // Check the schedule first (schedules::validate). Only a caller that made
  // the schedule with a generator, valid by construction, may skip it.
  bool validate = true;
  // How the messages on one directed link share it (link_model.hpp).
  LinkSharing link_sharing = LinkSharing::fifo;
  // How overlapped F&B pairs run (overlap_model.hpp): none, one after the
  // other; a share in [0.5, 1], concurrently.
  std::optional<double> overlap_share;
};

struct SimResult {
  timelines::Timeline timeline;  // info always; actions and memory when recorded
  timelines::Metrics metrics;
};

// What every replay ends with (replay.hpp, direct_replay.hpp): the error of a
// rank that did not run its whole program, and the info of the result.
[[nodiscard]] RunError stalled(int rank, const schedules::Action& waits_at);
[[nodiscard]] timelines::TimelineInfo simulated_info(const schedules::Schedule& schedule, const SimOptions& options);

// Throws InputError for an invalid schedule.
[[nodiscard]] SimResult simulate(const schedules::Schedule& schedule, const CostModel& costs,
                                 const LinkModel& links, const SimOptions& options = {});

}  // namespace gpipe::sim
