// How long each message of a measured timeline took on its link: from the
// later of its SEND's and its RECV's start (both sides there) to the RECV's
// end. A message that arrived before its RECV began counts only the RECV's
// own time, an under-estimate of the link. What `gpipe-sim diff` compares the
// link model with (sim/diff.hpp TransferError), and what `gpipe-run profile`
// fits the link's bandwidth to under mpirun (exec/mpi/pipeline_transfers.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "timelines/timeline.hpp"

namespace gpipe::timelines {

struct MeasuredTransfer {
  const TimedAction* receive = nullptr;  // the RECV_F or RECV_B, in the timeline
  std::int64_t took_ns = 0;
};

// Every RECV of `timeline`, in its order, with the time its message took.
[[nodiscard]] std::vector<MeasuredTransfer> measured_transfers(const Timeline& timeline);

}  // namespace gpipe::timelines
