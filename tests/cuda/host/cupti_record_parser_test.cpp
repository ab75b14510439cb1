// Reading CUDA 13's CUPTI record structs (filled in by hand, as CUPTI would)
// into the tracer's plain records.
#include <gtest/gtest.h>

#include "exec/cuda/cupti/record_parser.hpp"

namespace gpipe::exec::cuda::cupti {
namespace {

// CUPTI hands records over as CUpti_Activity*; so does this (through void*,
// as a buffer of bytes would be).
template <typename Record>
const CUpti_Activity& as_activity(const Record& r) {
  return *static_cast<const CUpti_Activity*>(static_cast<const void*>(&r));
}

TEST(CuptiRecordParser, Kernel) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "layer_norm_kernel";
  k.start = 1'000'000'123;
  k.end = 1'000'000'999;
  k.streamId = 14;
  k.correlationId = 77;
  k.deviceId = 1;
  ActivityRecords out;
  append_record(as_activity(k), out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0], (KernelRecord{.name = "layer_norm_kernel", .start_ns = 1'000'000'123,
                                          .end_ns = 1'000'000'999, .stream = 14,
                                          .correlation = 77, .device = 1}));
}

TEST(CuptiRecordParser, Memcpy) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.streamId = 3;
  m.correlationId = 5;
  ActivityRecords out;
  append_record(as_activity(m), out);
  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_EQ(out.memcpys[0].kind, MemcpyKind::dtod);
  EXPECT_EQ(out.memcpys[0].bytes, 1u << 20);
  EXPECT_EQ(out.memcpys[0].end_ns, 20);
  EXPECT_EQ(out.memcpys[0].correlation, 5u);
  EXPECT_EQ(memcpy_kind_of(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA), MemcpyKind::other);
}

TEST(CuptiRecordParser, RuntimeAndExternalCorrelation) {
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 5;
  a.end = 9;
  a.correlationId = 77;
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = 123456789012ULL;
  e.correlationId = 77;
  CUpti_ActivityExternalCorrelation foreign = e;  // another tool's kind: not ours
  foreign.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
  ActivityRecords out;
  append_record(as_activity(a), out);
  append_record(as_activity(e), out);
  append_record(as_activity(foreign), out);
  ASSERT_EQ(out.runtime.size(), 1u);
  EXPECT_FALSE(out.runtime[0].driver);
  EXPECT_EQ(out.runtime[0].cbid, static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_EQ(out.runtime[0].correlation, 77u);
  ASSERT_EQ(out.external.size(), 1u);
  EXPECT_EQ(out.external[0], (ExternalCorrelationRecord{123456789012ULL, 77}));
  EXPECT_EQ(out.other_kinds, 1u);
}

TEST(CuptiRecordParser, MemsetAndDriverApi) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = 256;
  m.start = 40;
  m.end = 45;
  m.streamId = 2;
  m.correlationId = 8;
  CUpti_ActivityAPI d{};
  d.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  d.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
  d.correlationId = 9;
  ActivityRecords out;
  append_record(as_activity(m), out);
  append_record(as_activity(d), out);
  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_EQ(out.memcpys[0], (MemcpyRecord{.kind = MemcpyKind::memset, .bytes = 256, .start_ns = 40,
                                          .end_ns = 45, .stream = 2, .correlation = 8, .device = 0}));
  ASSERT_EQ(out.runtime.size(), 1u);
  EXPECT_TRUE(out.runtime[0].driver);
  EXPECT_EQ(out.runtime[0].correlation, 9u);
}

TEST(CuptiRecordParser, OtherKindsAreCountedNotParsed) {
  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  ActivityRecords out;
  append_record(other, out);
  EXPECT_EQ(out.other_kinds, 1u);
  EXPECT_TRUE(out.kernels.empty() && out.memcpys.empty());
}

}  // namespace
}  // namespace gpipe::exec::cuda::cupti
