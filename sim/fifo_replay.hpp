// Replaying a schedule when every link is a FIFO (LinkSharing::fifo,
// docs/design.md's deterministic default): a message starts at max(end of the
// action that produced it, end of the previous message on its link).
//
// That needs no clock at all. Every message on a link comes from one rank, in
// that rank's program order, so its arrival is fixed the moment its producer
// ends, and any order of starting actions that respects the dependencies gives
// the times of an event-by-event replay to the ns. So this is a dataflow pass:
// each rank runs as far as its inputs allow, then waits until the delivery of
// the input it lacks wakes it.
#pragma once

#include "sim/replay.hpp"
#include "sim/stage_links.hpp"

namespace gpipe::sim {

// Runs every rank of `replay` to the end of its program, or as far as it can
// (a stall, which Replay::finish reports).
void replay_fifo_links(Replay& replay, const StageLinks& links);

}  // namespace gpipe::sim
