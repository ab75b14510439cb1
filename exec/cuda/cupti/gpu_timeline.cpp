#include "exec/cuda/cupti/gpu_timeline.hpp"

#include <algorithm>
#include <tuple>

namespace gpipe::exec::cuda::cupti {

std::map<std::uint32_t, std::uint64_t> correlation_to_external(const ActivityRecords& records) {
  std::map<std::uint32_t, std::uint64_t> result;
  for (const auto& e : records.external) result.emplace(e.correlation, e.external_id);
  return result;
}

namespace {

struct Interval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

}  // namespace

GpuTimeline build_gpu_timeline(const ActivityRecords& records, const ExternalIdMap& actions,
                               std::int64_t origin_ns) {
  const auto external_of = correlation_to_external(records);
  GpuTimeline result;
  result.dropped_records = records.dropped;
  std::map<std::uint64_t, Interval> spans;  // external id -> GPU interval so far

  const auto claim = [&](std::uint32_t correlation, std::int64_t start, std::int64_t end) {
    const auto e = external_of.find(correlation);
    if (e == external_of.end()) {
      ++result.unmatched_records;
      return;
    }
    if (!actions.contains(e->second)) {
      ++result.unknown_external_records;
      return;
    }
    const auto [it, first] = spans.try_emplace(e->second, Interval{start, end});
    if (!first) {
      it->second.start_ns = std::min(it->second.start_ns, start);
      it->second.end_ns = std::max(it->second.end_ns, end);
    }
  };
  for (const auto& k : records.kernels) claim(k.correlation, k.start_ns, k.end_ns);
  for (const auto& m : records.memcpys) claim(m.correlation, m.start_ns, m.end_ns);

  for (const auto& [id, ref] : actions) {
    const auto span = spans.find(id);
    if (span == spans.end()) {
      result.actions_without_gpu_work.push_back(id);
      continue;
    }
    result.actions.push_back(timelines::TimedAction{
        .action = ref.action,
        .rank = ref.rank,
        .stream = timelines::stream_of(ref.action.kind),
        .start_ns = span->second.start_ns - origin_ns,
        .end_ns = span->second.end_ns - origin_ns,
    });
  }
  std::ranges::sort(result.actions, [](const auto& a, const auto& b) {
    return std::tuple(a.rank.value, a.start_ns, a.stream) <
           std::tuple(b.rank.value, b.start_ns, b.stream);
  });
  return result;
}

}  // namespace gpipe::exec::cuda::cupti
