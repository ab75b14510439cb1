// The engine's deterministic semantics (engine.hpp), for the case a sweep
// runs a million times: a cost model with a price table
// (CostModel::stage_prices: a profile's, and what reprices it per stage and
// kind, data parallelism and the action overheads), FIFO links, no
// timeline, and a program of work alone (F, B, I, W, with R, STEP and data
// parallelism's REDUCE_GRAD and WAIT_REDUCE_GRAD as lowering adds them).
// Same rules, same integer ns, same metrics as the graph replay
// (fifo_replay.hpp), without building the graph: each rank runs its program
// straight from the schedule, and the only inputs it can wait for are the two
// that cross ranks, an activation from stage s-1 and a gradient from stage
// s+1, kept per (stage, micro-batch) as their arrival times. (Every other
// input, F before its own B or R, I before W, the backwards before STEP, a
// stage's reduction before its WAIT_REDUCE_GRAD, is made earlier on the rank
// itself, so the rank is free only after it; the reduction ends on the
// rank's reduce stream, kept per rank.) The costs are read from the model's
// table (stage_prices.hpp), and each boundary's messages priced once per
// micro-batch class.
//
// Tests hold it to the graph replay, metric by metric, over every generated
// family, recompute policy and uneven micro-batch sizes, with and without the
// repricings (direct_replay_test).
#pragma once

#include <optional>

#include "schedules/schedule.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/link_model.hpp"

namespace gpipe::sim {

// The metrics of simulate(schedule, costs, links, options), or nothing where
// this replay does not apply: a model without a price table, a recorded
// timeline, shared links, overlapped pairs run concurrently, a tied
// embedding's exchange, or a program with more than work (send waits,
// housekeeping, a lowered schedule). Does not validate the schedule: the
// caller does (simulate() does, when options.validate asks). Throws RunError
// for a stall, as simulate() does.
[[nodiscard]] std::optional<SimResult> try_direct_replay(const schedules::Schedule& schedule,
                                                         const CostModel& costs, const LinkModel& links,
                                                         const SimOptions& options);

}  // namespace gpipe::sim
