// An inference stream's Chrome trace: the Timeline's (chrome_trace.hpp: every
// forward and transfer, a flow per message), with each item's times in the
// args of its last forward (arrival_us, admitted_us, completed_us,
// latency_us) and the stream's metrics in otherData.gpipe.stream, so that
// Perfetto shows an item's latency where it ends. The simulator and the
// executor write the same.
#pragma once

#include <nlohmann/json.hpp>

#include "schedules/stream.hpp"
#include "schedules/stream_metrics.hpp"

namespace gpipe::schedules {

[[nodiscard]] nlohmann::json stream_chrome_trace(const StreamRun& run, const StreamMetrics& metrics);

}  // namespace gpipe::schedules
