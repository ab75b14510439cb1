// Replaying a schedule when the messages on a link share its bandwidth
// (LinkSharing::shared, sim/shared_link.hpp): a message's arrival then
// depends on the messages sent after it, so, unlike the FIFO replay, this
// one keeps a clock and replays events in time order (event_queue.hpp): the
// end of each rank's running compute action (at most one per rank) and each
// link's next change.
#pragma once

#include "sim/replay.hpp"
#include "sim/stage_links.hpp"

namespace gpipe::sim {

// Runs every rank of `replay` to the end of its program, or as far as it can
// (a stall, which Replay::finish reports).
void replay_shared_links(Replay& replay, const StageLinks& links);

}  // namespace gpipe::sim
