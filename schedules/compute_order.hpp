// The compute order of a schedule, as an executor that inserts its own
// transfers runs it: each rank's F, B, I and W in the file's order, with the
// overlapped pairs, and nothing else. A torch file with comms posts its
// receives early and waits on its sends (WAIT_SEND_*); an executor whose
// receive blocks would stall on the early ones, so it lowers this order
// again (schedules/lower.hpp: each receive just before its consumer). R and
// STEP go too (lowering puts them back per the recompute policy), as do the
// FSDP/DP housekeeping actions, which cost nothing here.
#pragma once

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

[[nodiscard]] Schedule compute_order(Schedule schedule);

}  // namespace gpipe::schedules
