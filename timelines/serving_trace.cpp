#include "timelines/serving_trace.hpp"

#include <cstddef>
#include <string>

#include "timelines/chrome_trace.hpp"

namespace gpipe::timelines {

nlohmann::json serving_chrome_trace(const ServingRun& run, const ServingMetrics& metrics) {
  nlohmann::json trace = to_chrome_trace(run.timeline);
  const int last = run.timeline.info.num_stages - 1;
  const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  for (nlohmann::json& event : trace["traceEvents"]) {
    if (event.value("ph", "") != "X") continue;
    const nlohmann::json& args = event["args"];
    if (args.value("kind", "") != "F" || args.value("stage", -1) != last) continue;
    const auto item = args.value("microbatch", -1);
    if (item < 0 || static_cast<std::size_t>(item) >= run.items.size()) continue;
    const ItemTimes& t = run.items[static_cast<std::size_t>(item)];
    event["args"]["arrival_us"] = us(t.arrival_ns);
    event["args"]["admitted_us"] = us(t.admitted_ns);
    event["args"]["completed_us"] = us(t.completed_ns);
    event["args"]["latency_us"] = us(t.latency_ns());
  }
  trace["otherData"]["gpipe"]["stream"] = {{"workload", "inference"}, {"metrics", to_json(metrics)}};
  return trace;
}

}  // namespace gpipe::timelines
