// The real ActivitySource, over CUPTI's Activity API as CUPTI documents it:
// buffers handed to CUPTI on request (8 MiB, 8-byte aligned), records walked
// with cuptiActivityGetNextRecord when CUPTI completes a buffer, dropped
// records counted per buffer (cuptiActivityGetNumDroppedRecords), and every
// buffer flushed (cuptiActivityFlushAll, forced) at stop. Kinds: concurrent
// kernels, memcpy, memset, runtime and driver API, external correlation (kind
// CUSTOM0). The driver API is traced too because libraries such as NCCL
// launch their kernels through it: without its records, their kernels would
// have no external id.
//
// CUPTI's callbacks are process-wide, so at most one source collects at a
// time; starting a second throws RunError.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/cuda/cupti/activity_source.hpp"

namespace gpipe::exec::cuda::cupti {

inline constexpr std::size_t kDefaultBufferBytes = std::size_t{8} << 20;

// CUPTI's clock now (cuptiGetTimestamp), the clock of every record's start and
// end: take it when the run starts and pass it as origin_ns to
// build_gpu_timeline and gpu_trace_events, so the trace starts near 0.
[[nodiscard]] std::int64_t cupti_timestamp_ns();

class CuptiActivitySource final : public ActivitySource {
 public:
  explicit CuptiActivitySource(std::size_t buffer_bytes = kDefaultBufferBytes);
  // Stops collecting if still started (records are discarded).
  ~CuptiActivitySource() override;
  CuptiActivitySource(const CuptiActivitySource&) = delete;
  CuptiActivitySource& operator=(const CuptiActivitySource&) = delete;

  // Requires a device (RunError "no CUDA device: ..." otherwise).
  void start() override;
  // Synchronizes the current device first, so every launched kernel is recorded.
  [[nodiscard]] ActivityRecords stop() override;
  void push_external_id(std::uint64_t external_id) override;
  std::uint64_t pop_external_id() override;

 private:
  std::size_t buffer_bytes_;
  bool started_ = false;
};

}  // namespace gpipe::exec::cuda::cupti
