#include "exec/cuda/cupti/cupti_activity_source.hpp"

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include <cuda_runtime.h>
#include <cupti.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/cupti/record_parser.hpp"

namespace gpipe::exec::cuda::cupti {

namespace {

constexpr std::size_t kAlignment = 8;  // ACTIVITY_RECORD_ALIGNMENT

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

// What CUPTI's callbacks (called from CUPTI's own thread) write into.
struct Collector {
  std::mutex mutex;
  bool active = false;
  std::size_t buffer_bytes = kDefaultBufferBytes;
  ActivityRecords records;
  std::string error;  // the first failure inside a callback (callbacks cannot throw)
};

Collector& collector() {
  static Collector c;
  return c;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  std::size_t bytes = 0;
  {
    std::lock_guard lock(collector().mutex);
    bytes = collector().buffer_bytes;
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, bytes));
  *size = *buffer != nullptr ? bytes : 0;
  *max_num_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid_size) {
  ActivityRecords batch;
  std::string error;
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_size, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // end of the valid records
    if (status != CUPTI_SUCCESS) {
      const char* text = nullptr;
      cuptiGetResultString(status, &text);
      error = std::string("cuptiActivityGetNextRecord: ") + (text != nullptr ? text : "error");
      break;
    }
    append_record(*record, batch);
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
    batch.dropped = dropped;
  }
  std::free(buffer);

  std::lock_guard lock(collector().mutex);
  Collector& c = collector();
  const auto move_all = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  move_all(c.records.kernels, batch.kernels);
  move_all(c.records.memcpys, batch.memcpys);
  move_all(c.records.runtime, batch.runtime);
  move_all(c.records.external, batch.external);
  c.records.dropped += batch.dropped;
  c.records.other_kinds += batch.other_kinds;
  if (c.error.empty()) c.error = std::move(error);
}

void disable_all() {
  for (const CUpti_ActivityKind kind : kKinds) (void)cuptiActivityDisable(kind);
}

}  // namespace

std::int64_t cupti_timestamp_ns() {
  std::uint64_t now = 0;
  GPIPE_CUPTI_CHECK(cuptiGetTimestamp(&now));
  return static_cast<std::int64_t>(now);
}

CuptiActivitySource::CuptiActivitySource(std::size_t buffer_bytes)
    : buffer_bytes_((buffer_bytes + kAlignment - 1) / kAlignment * kAlignment) {
  if (buffer_bytes_ == 0) throw InputError("CUPTI activity buffer size must be positive");
}

CuptiActivitySource::~CuptiActivitySource() {
  if (!started_) return;
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disable_all();
  std::lock_guard lock(collector().mutex);
  collector().active = false;
  collector().records = {};
}

void CuptiActivitySource::start() {
  if (started_) throw RunError("CUPTI tracer: start() while already started");
  require_device();
  {
    std::lock_guard lock(collector().mutex);
    if (collector().active) throw RunError("CUPTI tracer: another tracer is already collecting");
    collector().active = true;
    collector().buffer_bytes = buffer_bytes_;
    collector().records = {};
    collector().error.clear();
  }
  try {
    GPIPE_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    for (const CUpti_ActivityKind kind : kKinds) GPIPE_CUPTI_CHECK(cuptiActivityEnable(kind));
  } catch (...) {
    disable_all();
    std::lock_guard lock(collector().mutex);
    collector().active = false;
    throw;
  }
  started_ = true;
}

ActivityRecords CuptiActivitySource::stop() {
  if (!started_) throw RunError("CUPTI tracer: stop() without start()");
  started_ = false;
  GPIPE_CUDA_CHECK(cudaDeviceSynchronize());
  // Forced: also hand back buffers CUPTI has not filled, so nothing stays behind.
  GPIPE_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  disable_all();
  ActivityRecords records;
  std::string error;
  {
    std::lock_guard lock(collector().mutex);
    records = std::exchange(collector().records, {});
    error = std::exchange(collector().error, {});
    collector().active = false;
  }
  if (!error.empty()) throw RunError("CUPTI tracer: " + error);
  for (RuntimeRecord& r : records.runtime) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(r.driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                             r.cbid, &name) == CUPTI_SUCCESS &&
        name != nullptr) {
      r.name = name;
    }
  }
  return records;
}

void CuptiActivitySource::push_external_id(std::uint64_t external_id) {
  GPIPE_CUPTI_CHECK(
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, external_id));
}

std::uint64_t CuptiActivitySource::pop_external_id() {
  std::uint64_t last = 0;
  GPIPE_CUPTI_CHECK(
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
  return last;
}

}  // namespace gpipe::exec::cuda::cupti
