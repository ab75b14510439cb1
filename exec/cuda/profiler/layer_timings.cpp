#include "exec/cuda/profiler/layer_timings.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"
#include "exec/profiling/profiler_inputs.hpp"

namespace gpipe::exec::cuda::profiler {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::step: return "step";
  }
  return "?";
}

namespace {

struct Span {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// External id -> span of its work, for the ids in `wanted`; `unclaimed`
// counts the kernels and copies of no wanted id.
std::map<std::uint64_t, Span> spans_of(const cupti::ActivityRecords& records,
                                       const std::set<std::uint64_t>& wanted, std::uint64_t& unclaimed) {
  const auto external_of = cupti::correlation_to_external(records);
  std::map<std::uint64_t, Span> spans;
  const auto claim = [&](std::uint32_t correlation, std::int64_t start, std::int64_t end) {
    const auto e = external_of.find(correlation);
    if (e == external_of.end() || !wanted.contains(e->second)) {
      ++unclaimed;
      return;
    }
    const auto [it, first] = spans.try_emplace(e->second, Span{start, end});
    if (!first) {
      it->second.start_ns = std::min(it->second.start_ns, start);
      it->second.end_ns = std::max(it->second.end_ns, end);
    }
  };
  for (const auto& k : records.kernels) claim(k.correlation, k.start_ns, k.end_ns);
  for (const auto& m : records.memcpys) claim(m.correlation, m.start_ns, m.end_ns);
  return spans;
}

}  // namespace

std::map<std::uint64_t, std::int64_t> gpu_durations(const cupti::ActivityRecords& records,
                                                    const std::vector<std::uint64_t>& ids) {
  std::uint64_t unclaimed = 0;
  std::map<std::uint64_t, std::int64_t> durations;
  for (const auto& [id, span] : spans_of(records, {ids.begin(), ids.end()}, unclaimed)) {
    durations.emplace(id, span.end_ns - span.start_ns);
  }
  return durations;
}

LayerTimings layer_timings(const cupti::ActivityRecords& records, const CallMap& calls) {
  LayerTimings result;
  result.dropped_records = records.dropped;
  std::set<std::uint64_t> ids;
  for (const auto& [id, call] : calls) ids.insert(id);
  const auto spans = spans_of(records, ids, result.unclaimed_records);

  std::map<TimingKey, std::vector<double>> samples;
  for (const auto& [id, call] : calls) {
    const TimingKey key{call.layer, call.phase == Phase::step ? 0 : call.micro_batch_size, call.phase};
    const auto span = spans.find(id);
    if (span != spans.end()) {
      samples[key].push_back(static_cast<double>(span->second.end_ns - span->second.start_ns));
    } else if (call.phase == Phase::step) {
      result.empty_steps.push_back(id);
      samples[key].push_back(0.0);
    } else {
      result.missing_calls.push_back(id);
    }
  }
  for (auto& [key, values] : samples) result.median_ns.emplace(key, median(std::move(values)));
  return result;
}

void require_complete(const LayerTimings& timings, const CallMap& calls) {
  if (!timings.missing_calls.empty()) {
    const CallRef& first = calls.at(timings.missing_calls.front());
    throw RunError(fmt::format(
        "CUPTI recorded no GPU work for {} layer call(s), the first the {} of layer {} at b={} in "
        "timed pass {}: the activity records are incomplete",
        timings.missing_calls.size(), to_string(first.phase), first.layer, first.micro_batch_size,
        first.repeat));
  }
  if (timings.dropped_records > 0) {
    throw RunError(fmt::format(
        "CUPTI dropped {} activity records (its buffers were full): the timings would be too "
        "short; profile with fewer --repeats or micro-batch sizes",
        timings.dropped_records));
  }
}

void apply_timings(const LayerTimings& timings, std::vector<profiles::LayerProfile>& layers) {
  const auto us_of = [&](const TimingKey& key, const profiles::LayerProfile& layer) {
    const auto it = timings.median_ns.find(key);
    if (it == timings.median_ns.end()) {
      throw RunError(fmt::format("layer {} ({}): no {} was timed at b={}", key.layer, layer.name,
                                 to_string(key.phase), key.micro_batch_size));
    }
    return it->second / 1e3;
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const int layer = static_cast<int>(i);
    for (profiles::ProfileSample& s : layers[i].samples) {
      s.fwd_us = us_of({layer, s.micro_batch_size, Phase::forward}, layers[i]);
      s.bwd_us = us_of({layer, s.micro_batch_size, Phase::backward}, layers[i]);
    }
    const auto step = timings.median_ns.find({layer, 0, Phase::step});
    layers[i].optimizer_us = step == timings.median_ns.end() ? 0.0 : step->second / 1e3;
  }
}

}  // namespace gpipe::exec::cuda::profiler
