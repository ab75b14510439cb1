#include "exec/cuda/profiler/link_probe.hpp"

#include <algorithm>
#include <optional>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/profiler/layer_timings.hpp"
#include "exec/profiling/profiler_inputs.hpp"

namespace gpipe::exec::cuda::profiler {

profiles::Link link_from_copies(std::int64_t small_bytes, const std::vector<double>& small_ns,
                                std::int64_t large_bytes, const std::vector<double>& large_ns) {
  if (small_ns.empty() || large_ns.empty()) throw InputError("link probe: no copy was timed");
  if (small_bytes < 0 || large_bytes <= small_bytes) {
    throw InputError(fmt::format("link probe: the large copy ({} B) must be larger than the small one ({} B)",
                                 large_bytes, small_bytes));
  }
  const double small = median(small_ns);
  const double large = median(large_ns);
  if (large <= small) {
    throw RunError(fmt::format("link probe: a {} B copy took {} ns, no longer than a {} B copy ({} ns)",
                               large_bytes, large, small_bytes, small));
  }
  const double bytes_per_ns = static_cast<double>(large_bytes - small_bytes) / (large - small);
  const double latency_ns = std::max(0.0, small - static_cast<double>(small_bytes) / bytes_per_ns);
  return profiles::Link{.latency_us = latency_ns / 1e3, .bandwidth_GBps = bytes_per_ns};
}

namespace {

// Device memory from the allocator for the lifetime of the probe.
struct Buffer {
  CachingAllocator& allocator;
  void* pointer;
  Buffer(CachingAllocator& a, std::int64_t bytes) : allocator(a), pointer(a.allocate(bytes)) {}
  ~Buffer() { allocator.free(pointer); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

}  // namespace

profiles::Link probe_link(const Stream& from, Stream& to, CachingAllocator& allocator,
                          cupti::ActivitySource& source, const LinkProbeOptions& options) {
  if (options.warmup < 0 || options.repeats < 1) {
    throw InputError(fmt::format("link probe: warmup {} and repeats {} (need >= 0 and >= 1)", options.warmup,
                                 options.repeats));
  }
  const Buffer src(allocator, options.large_bytes);
  const Buffer dst(allocator, options.large_bytes);
  GPIPE_CUDA_CHECK(cudaMemsetAsync(src.pointer, 0, static_cast<std::size_t>(options.large_bytes), from.get()));
  Stream copies(from.device());
  Event sent(/*timing=*/false);
  Event arrived(/*timing=*/false);
  // One hand-off as the executor makes it: the copy waits for the sender's
  // stream, the receiver's stream waits for the copy.
  const auto hand_off = [&](std::int64_t bytes, std::optional<std::uint64_t> id) {
    sent.record(from);
    copies.wait(sent);
    {
      std::optional<cupti::ExternalIdScope> scope;
      if (id) scope.emplace(source, *id);
      GPIPE_CUDA_CHECK(cudaMemcpyAsync(dst.pointer, src.pointer, static_cast<std::size_t>(bytes),
                                       cudaMemcpyDeviceToDevice, copies.get()));
    }
    arrived.record(copies);
    to.wait(arrived);
  };
  for (int i = 0; i < options.warmup; ++i) {
    hand_off(options.small_bytes, std::nullopt);
    hand_off(options.large_bytes, std::nullopt);
  }
  copies.synchronize();

  std::vector<std::uint64_t> small_ids;
  std::vector<std::uint64_t> large_ids;
  std::uint64_t next_id = 1;
  source.start();
  try {
    for (int i = 0; i < options.repeats; ++i) {  // interleaved, so drift touches both sizes alike
      small_ids.push_back(next_id);
      hand_off(options.small_bytes, next_id++);
      large_ids.push_back(next_id);
      hand_off(options.large_bytes, next_id++);
    }
  } catch (...) {
    (void)source.stop();
    throw;
  }
  const cupti::ActivityRecords records = source.stop();  // synchronizes the device
  if (records.dropped > 0) throw RunError(fmt::format("link probe: CUPTI dropped {} records", records.dropped));
  std::vector<std::uint64_t> ids = small_ids;
  ids.insert(ids.end(), large_ids.begin(), large_ids.end());
  const auto durations = gpu_durations(records, ids);
  const auto times = [&](const std::vector<std::uint64_t>& of) {
    std::vector<double> ns;
    for (const std::uint64_t id : of) {
      const auto d = durations.find(id);
      if (d == durations.end()) throw RunError(fmt::format("link probe: CUPTI recorded no copy for copy {}", id));
      ns.push_back(static_cast<double>(d->second));
    }
    return ns;
  };
  return link_from_copies(options.small_bytes, times(small_ids), options.large_bytes, times(large_ids));
}

}  // namespace gpipe::exec::cuda::profiler
