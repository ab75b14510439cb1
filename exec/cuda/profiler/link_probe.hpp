// The link between two stages on one GPU, as a profile states it (latency_us
// + bytes / bandwidth): a device-to-device cudaMemcpyAsync on a copy stream of
// its own, ordered after the sending stage's stream with an event, as the
// executor moves an activation between two SM partitions. Each copy runs
// under its own external id and is timed by its CUPTI memcpy record (the
// copy's start and end on the GPU, no host time in it): the median of a small
// copy and of a large one give two points, and the link is the line through
// them. The GPU half needs a device; the arithmetic is link_from_copies,
// tested in CI.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/cuda/cupti/activity_source.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cuda::profiler {

struct LinkProbeOptions {
  std::int64_t small_bytes = 512;                  // latency-bound
  std::int64_t large_bytes = std::int64_t{64} << 20;  // bandwidth-bound
  int warmup = 3;    // untimed copies of each size first
  int repeats = 20;  // timed copies of each size; the medians are kept
};

// The line through (small_bytes, median small time) and (large_bytes, median
// large time): bandwidth its slope (bytes per ns = GB/s), latency its value at
// 0 bytes (clamped at 0). Times in ns. Throws RunError when the large copy is
// not slower than the small one (no slope to take), InputError for empty
// samples or large_bytes <= small_bytes.
[[nodiscard]] profiles::Link link_from_copies(std::int64_t small_bytes, const std::vector<double>& small_ns,
                                              std::int64_t large_bytes, const std::vector<double>& large_ns);

// Measures the link from `from`'s partition to `to`'s on their device; `source`
// must not be collecting (the probe starts and stops it). The calling thread
// must be bound to `from`'s context (SmPartitions::ThreadBinding): the probe's
// events are recorded on `from` and on a copy stream it makes in that context.
// Needs a GPU.
[[nodiscard]] profiles::Link probe_link(const Stream& from, Stream& to, CachingAllocator& allocator,
                                        cupti::ActivitySource& source, const LinkProbeOptions& options = {});

}  // namespace gpipe::exec::cuda::profiler
