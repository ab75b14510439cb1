#include "timelines/serving_run.hpp"

#include <algorithm>
#include <utility>

namespace gpipe::timelines {

TimelineInfo serving_info(int num_stages, int requests, int micro_batch_size, std::string source,
                         std::string device, std::vector<std::int64_t> static_bytes) {
  TimelineInfo info;
  info.schedule_name = "inference";
  info.num_ranks = num_stages;
  info.num_stages = num_stages;
  info.num_microbatches = requests;
  for (int s = 0; s < num_stages; ++s) info.stage_to_rank.push_back(schedules::Rank{s});
  info.source = std::move(source);
  info.device = std::move(device);
  info.batch_size = static_cast<std::int64_t>(requests) * micro_batch_size;
  info.static_bytes = std::move(static_bytes);
  return info;
}

std::int64_t peak_of(schedules::Rank rank, std::int64_t base, std::vector<MemoryChange>& changes,
                     std::vector<MemorySample>* samples) {
  std::ranges::sort(changes, [](const MemoryChange& a, const MemoryChange& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.delta < b.delta;
  });
  std::int64_t bytes = base;
  std::int64_t peak = base;
  if (samples != nullptr) samples->push_back({rank, 0, base});
  for (const MemoryChange& c : changes) {
    bytes += c.delta;
    peak = std::max(peak, bytes);
    if (samples != nullptr) samples->push_back({rank, c.time_ns, bytes});
  }
  return peak;
}

}  // namespace gpipe::timelines
