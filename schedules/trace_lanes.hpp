// Chrome-trace thread ids for a Timeline's actions. Tid 0 is the compute
// stream, whose actions never overlap. A rank's transfers can overlap in time
// when they travel different links (activations forward while gradients go
// back), and Perfetto draws overlapping events on one thread badly, so each
// comm stream is split into lanes: sends on tids 1, 3, 5, ... and receives on
// tids 2, 4, 6, ..., a transfer taking the first lane free at its start. The
// backward of an overlapped pair that ran beside its forward (Stream::overlap)
// goes on tid kOverlapTid, "overlap".
#pragma once

#include <string>
#include <vector>

#include "schedules/timeline.hpp"

namespace gpipe::schedules {

// Far above any comm lane a rank could need.
inline constexpr int kOverlapTid = 1'000'000;

// One tid per action of the timeline, in the same order.
[[nodiscard]] std::vector<int> assign_tids(const Timeline& timeline);

[[nodiscard]] Stream stream_of_tid(int tid);

// "compute", "send", "recv", then "send 2", "recv 2", ... for the extra lanes,
// and "overlap".
[[nodiscard]] std::string thread_name(int tid);

}  // namespace gpipe::schedules
