#include "exec/cuda/cupti/record_parser.hpp"

#include <cstdint>

namespace gpipe::exec::cuda::cupti {

namespace {

std::int64_t ns(std::uint64_t t) { return static_cast<std::int64_t>(t); }

}  // namespace

MemcpyKind memcpy_kind_of(std::uint8_t cupti_copy_kind) {
  switch (cupti_copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return MemcpyKind::htod;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return MemcpyKind::dtoh;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return MemcpyKind::htoh;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return MemcpyKind::dtod;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::peer;
    case CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN: return MemcpyKind::unknown;
    default: return MemcpyKind::other;  // array copies
  }
}

void append_record(const CUpti_Activity& record, ActivityRecords& out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      out.kernels.push_back(KernelRecord{.name = k.name != nullptr ? k.name : "",
                                         .start_ns = ns(k.start),
                                         .end_ns = ns(k.end),
                                         .stream = k.streamId,
                                         .correlation = k.correlationId,
                                         .device = k.deviceId});
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      out.memcpys.push_back(MemcpyRecord{.kind = memcpy_kind_of(m.copyKind),
                                         .bytes = m.bytes,
                                         .start_ns = ns(m.start),
                                         .end_ns = ns(m.end),
                                         .stream = m.streamId,
                                         .correlation = m.correlationId,
                                         .device = m.deviceId});
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      out.memcpys.push_back(MemcpyRecord{.kind = MemcpyKind::memset,
                                         .bytes = m.bytes,
                                         .start_ns = ns(m.start),
                                         .end_ns = ns(m.end),
                                         .stream = m.streamId,
                                         .correlation = m.correlationId,
                                         .device = m.deviceId});
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(record);
      out.runtime.push_back(RuntimeRecord{.driver = record.kind == CUPTI_ACTIVITY_KIND_DRIVER,
                                          .cbid = static_cast<std::uint32_t>(a.cbid),
                                          .name = {},
                                          .start_ns = ns(a.start),
                                          .end_ns = ns(a.end),
                                          .correlation = a.correlationId});
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      // Only our kind: another tool in the process may push its own ids.
      if (e.externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
        ++out.other_kinds;
        return;
      }
      out.external.push_back(
          ExternalCorrelationRecord{.external_id = e.externalId, .correlation = e.correlationId});
      return;
    }
    default:
      ++out.other_kinds;
      return;
  }
}

}  // namespace gpipe::exec::cuda::cupti
