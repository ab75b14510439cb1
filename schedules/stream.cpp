#include "schedules/stream.hpp"

#include <algorithm>

namespace gpipe::schedules {

std::int64_t peak_of(Rank rank, std::int64_t base, std::vector<MemoryChange>& changes,
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

}  // namespace gpipe::schedules
