// The Kineto-shaped GPU events of a measured trace, and their merge into a
// schedules Chrome trace that still reads back into the same Timeline.
#include <gtest/gtest.h>

#include "exec/cuda/cupti/kernel_events.hpp"
#include "timelines/chrome_trace.hpp"

namespace gpipe::exec::cuda::cupti {
namespace {

using nlohmann::json;
using schedules::ActionKind;
using schedules::make_action;
using schedules::Rank;

ActivityRecords sample() {
  ActivityRecords r;
  r.external = {{1, 10}};
  r.kernels = {KernelRecord{.name = "ampere_sgemm", .start_ns = 2'000, .end_ns = 3'500,
                            .stream = 13, .correlation = 10, .device = 0},
               KernelRecord{.name = "stray", .start_ns = 9'000, .end_ns = 9'250, .stream = 7,
                            .correlation = 42, .device = 1}};
  r.memcpys = {MemcpyRecord{.kind = MemcpyKind::htod, .bytes = 4096, .start_ns = 1'000,
                            .end_ns = 1'800, .stream = 13, .correlation = 10, .device = 0}};
  r.memcpys.push_back(MemcpyRecord{.kind = MemcpyKind::memset, .bytes = 8, .start_ns = 3'600,
                                   .end_ns = 3'700, .stream = 13, .correlation = 10, .device = 0});
  r.dropped = 2;
  return r;
}

const ExternalIdMap kActions = {{1, ActionRef{Rank{2}, make_action(2, ActionKind::F, 4)}}};

TEST(GpuTraceEvents, KernelEventHasKinetoShape) {
  const json events = gpu_trace_events(sample(), kActions, 1'000);
  const json& k = events.at(0);
  EXPECT_EQ(k["ph"], "X");
  EXPECT_EQ(k["cat"], "kernel");
  EXPECT_EQ(k["name"], "ampere_sgemm");
  EXPECT_EQ(k["pid"], 2);
  EXPECT_EQ(k["tid"], kStreamTidBase + 13);
  EXPECT_DOUBLE_EQ(k["ts"].get<double>(), 1.0);   // (2000 - 1000) ns
  EXPECT_DOUBLE_EQ(k["dur"].get<double>(), 1.5);  // 1500 ns
  EXPECT_EQ(k["args"]["stream"], 13);
  EXPECT_EQ(k["args"]["correlation"], 10);
  EXPECT_EQ(k["args"]["device"], 0);
  EXPECT_EQ(k["args"]["external id"], 1);
  EXPECT_EQ(k["args"]["action"], "2F4");
}

TEST(GpuTraceEvents, UnattributedWorkGoesToItsDeviceProcess) {
  const json events = gpu_trace_events(sample(), kActions);
  const json& stray = events.at(1);
  EXPECT_EQ(stray["pid"], kUnattributedPidBase + 1);
  EXPECT_FALSE(stray["args"].contains("action"));
  bool named = false;
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == kUnattributedPidBase + 1) {
      named = e["args"]["name"] == "GPU 1 (no action)";
    }
  }
  EXPECT_TRUE(named);
}

TEST(GpuTraceEvents, CopyEventAndThreadNames) {
  const json events = gpu_trace_events(sample(), kActions);
  const json& c = events.at(2);
  EXPECT_EQ(c["cat"], "gpu_memcpy");
  EXPECT_EQ(c["name"], "Memcpy HtoD");
  EXPECT_EQ(c["args"]["bytes"], 4096);
  EXPECT_EQ(c["args"]["correlation"], 10);
  EXPECT_EQ(events.at(3)["cat"], "gpu_memset");
  EXPECT_EQ(events.at(3)["name"], "Memset");
  int thread_names = 0;
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      ++thread_names;
      EXPECT_EQ(e["args"]["name"], "cuda stream " + std::to_string(e["tid"].get<int>() - kStreamTidBase));
    }
  }
  EXPECT_EQ(thread_names, 2);  // (rank 2, stream 13) and (GPU 1, stream 7)
}

TEST(GpuTraceEvents, MergedTraceReadsBackIntoTheSameTimeline) {
  timelines::Timeline timeline;
  timeline.info.schedule_name = "gpipe";
  timeline.info.num_ranks = 3;
  timeline.info.num_stages = 3;
  timeline.info.num_microbatches = 5;
  timeline.info.stage_to_rank = {Rank{0}, Rank{1}, Rank{2}};
  timeline.info.source = "cuda";
  const GpuTimeline gpu = build_gpu_timeline(sample(), kActions);
  timeline.actions = gpu.actions;
  ASSERT_EQ(timeline.actions.size(), 1u);
  EXPECT_EQ(timeline.actions[0].start_ns, 1'000);
  EXPECT_EQ(timeline.actions[0].end_ns, 3'700);  // the memset ends last

  json trace = timelines::to_chrome_trace(timeline);
  const std::size_t before = trace["traceEvents"].size();
  append_gpu_events(trace, sample(), kActions);
  EXPECT_EQ(trace["traceEvents"].size(), before + gpu_trace_events(sample(), kActions).size());
  const json& counts = trace["otherData"]["gpipe"]["gpu_records"];
  EXPECT_EQ(counts["kernels"], 2);
  EXPECT_EQ(counts["memcpys"], 2);  // copies and sets
  EXPECT_EQ(counts["unmatched"], 1);
  EXPECT_EQ(counts["dropped"], 2);
  EXPECT_EQ(timelines::timeline_from_chrome_trace(trace, "merged").actions, timeline.actions);
}

}  // namespace
}  // namespace gpipe::exec::cuda::cupti
