// The GPU activity records the tracer works with: plain copies of what CUPTI
// reports (kernels, memory copies and sets, runtime and driver API calls,
// external correlations),
// free of CUPTI's versioned structs, so timeline building and its tests need
// neither CUPTI nor a GPU. Times are CUPTI timestamps in nanoseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpipe::exec::cuda::cupti {

struct KernelRecord {
  std::string name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t stream = 0;       // CUPTI's stream id
  std::uint32_t correlation = 0;  // matches the launching runtime call
  std::uint32_t device = 0;

  bool operator==(const KernelRecord&) const = default;
};

// memset: a cudaMemset on the GPU (CUPTI reports it apart; it is GPU work of
// its action all the same).
enum class MemcpyKind : std::uint8_t { unknown, htod, dtoh, htoh, dtod, peer, other, memset };

[[nodiscard]] const char* to_string(MemcpyKind kind);

struct MemcpyRecord {
  MemcpyKind kind = MemcpyKind::unknown;
  std::uint64_t bytes = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;
  std::uint32_t device = 0;

  bool operator==(const MemcpyRecord&) const = default;
};

// One CUDA API call on the host: runtime (cudaLaunchKernel, cudaMemcpyAsync...)
// or driver (cuLaunchKernelEx, as libraries like NCCL call it). Both carry the
// correlation id of the work they launch.
struct RuntimeRecord {
  bool driver = false;     // a driver API call (cbid is CUPTI_DRIVER_TRACE_CBID_*)
  std::uint32_t cbid = 0;  // CUPTI_RUNTIME_TRACE_CBID_*
  std::string name;        // filled in where CUPTI can name the cbid; may be empty
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t correlation = 0;

  bool operator==(const RuntimeRecord&) const = default;
};

// CUPTI's link from the id we pushed (one per IR action) to the correlation id
// of a runtime call made while it was pushed; that runtime call's kernels and
// copies carry the same correlation id.
struct ExternalCorrelationRecord {
  std::uint64_t external_id = 0;
  std::uint32_t correlation = 0;

  bool operator==(const ExternalCorrelationRecord&) const = default;
};

// Everything one trace session collected.
struct ActivityRecords {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<RuntimeRecord> runtime;
  std::vector<ExternalCorrelationRecord> external;
  std::uint64_t dropped = 0;       // records CUPTI could not store (buffers full)
  std::uint64_t other_kinds = 0;   // records of kinds we did not ask for (ignored)

  bool operator==(const ActivityRecords&) const = default;
};

}  // namespace gpipe::exec::cuda::cupti
