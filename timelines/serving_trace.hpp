// A serving run's Chrome trace: the Timeline's (chrome_trace.hpp: every
// forward and transfer, a flow per message), with each item's times in the
// args of its last forward (arrival_us, admitted_us, completed_us,
// latency_us) and the run's metrics in otherData.gpipe.stream, so that
// Perfetto shows an item's latency where it ends. The simulator and the
// executor write the same.
#pragma once

#include <nlohmann/json.hpp>

#include "timelines/serving_metrics.hpp"
#include "timelines/serving_run.hpp"

namespace gpipe::timelines {

[[nodiscard]] nlohmann::json serving_chrome_trace(const ServingRun& run, const ServingMetrics& metrics);

}  // namespace gpipe::timelines
