// Where each rank idled in a timeline, and what held it: the bubble's
// attribution, for a prediction and a measured run alike.
//
// A rank's idle time is the step (the timeline's earliest start to its latest
// end) less its compute-stream actions. Each gap before a compute action X is
// split by what X waited for: X = F of stage s > 0 waits for RECV_F(s, m),
// X = B or I of a stage before the last for RECV_B(s, m), when that receive
// is on X's rank and ends after the gap begins. Of the gap up to that end:
// - `peer`: until the message's SEND started on the other rank (the peer
//   stage was still computing what X needs);
// - `transfer`: from the SEND's start to the RECV's end (the bytes moving);
// the rest of the gap is `other` (the host or the runtime between actions,
// or a wait on something else). The time after a rank's last compute action
// is `after_last` (the others finishing). peer + transfer + other +
// after_last = idle, exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timelines/timeline.hpp"

namespace gpipe::sim {

struct RankWaits {
  int rank = 0;
  std::int64_t idle_ns = 0;
  std::int64_t peer_ns = 0;
  std::int64_t transfer_ns = 0;
  std::int64_t other_ns = 0;
  std::int64_t after_last_ns = 0;
  // The longest single wait for a message: "1F2 (rank 1) waited 3.2 ms for
  // 0SEND_F2 (rank 0)"; empty when none.
  std::string longest;
  std::int64_t longest_ns = 0;
};

[[nodiscard]] std::vector<RankWaits> attribute_waits(const timelines::Timeline& timeline);

}  // namespace gpipe::sim
