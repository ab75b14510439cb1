// SM partitions for the stages of a pipeline on one GPU: each stage gets its
// own green context (a disjoint set of SMs) and a stream in it, so K stages
// run side by side like K small GPUs and a real K-stage pipeline is
// measurable on one device.
//
// plan_sm_split is the pure arithmetic (tested in CI); SmPartitions is the
// driver path (CUDA 12.4+, reached through cudaGetDriverEntryPointByVersion so
// that gpipe never links libcuda): cuDeviceGetDevResource(SM) ->
// cuDevSmResourceSplitByCount -> cuDevResourceGenerateDesc -> cuGreenCtxCreate
// -> cuGreenCtxStreamCreate. Where green contexts are unavailable (old driver,
// entry point missing, a driver error) it falls back to plain streams sharing
// every SM, and why() says so for the caller to print.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/cuda/base/stream.hpp"

namespace gpipe::exec::cuda {

// What the driver allows on the device (cuDeviceGetDevResource's minSmPartitionSize
// and smCoscheduledAlignment). The CUDA driver API documents, for compute
// capability 9.0+ (Hopper): "the minimum count is 8 SMs and must be a multiple of 8".
struct SmGranularity {
  int min_partition_sms = 8;
  int alignment_sms = 8;
};
inline constexpr SmGranularity kHopperGranularity{8, 8};

// The granularity to plan with: what the driver reports, but on compute
// capability 9.x and later never finer than the documented 8 SMs (a driver
// that reports less would have its split rounded up behind our back).
[[nodiscard]] SmGranularity effective_granularity(SmGranularity reported, int compute_capability_major);

struct SmSplit {
  int stages = 0;
  int sms_per_stage = 0;   // every partition has exactly this many
  int requested_sms = 0;   // --sm-per-stage as given (0: even split)
  int unused_sms = 0;      // total - stages * sms_per_stage: left to no stage
};

// K = `stages` equal partitions of a device with `total_sms`:
// - sm_per_stage == 0: the even split, total / K rounded down to the alignment;
// - sm_per_stage  > 0: that many, rounded up to the alignment and the minimum
//   (the driver would round the same way; doing it here lets the caller print it).
// Throws InputError naming --stages or --sm-per-stage when K partitions do not fit.
[[nodiscard]] SmSplit plan_sm_split(int total_sms, int stages, int sm_per_stage,
                                    SmGranularity granularity = kHopperGranularity);

// "4 partitions of 32 SMs (4 of 132 unused)", for logs.
[[nodiscard]] std::string describe(const SmSplit& split, int total_sms);

// K streams on `device`, one per stage, each in its own green context when possible.
class SmPartitions {
 public:
  // Throws InputError when the requested split does not fit the device; falls back
  // to plain streams (green() false, why() saying why) when green contexts are unavailable.
  [[nodiscard]] static SmPartitions create(int device, int stages, int sm_per_stage = 0);
  ~SmPartitions();
  SmPartitions(SmPartitions&& other) noexcept;
  SmPartitions& operator=(SmPartitions&& other) noexcept;
  SmPartitions(const SmPartitions&) = delete;
  SmPartitions& operator=(const SmPartitions&) = delete;

  [[nodiscard]] int size() const { return static_cast<int>(streams_.size()); }
  [[nodiscard]] Stream& stream(int stage) { return streams_.at(static_cast<std::size_t>(stage)); }
  // True when every stage runs in its own green context.
  [[nodiscard]] bool green() const { return green_; }
  // Makes the green context of `stage` current on the calling thread, so that
  // what the thread creates (events, streams) belongs to it and its runtime
  // calls run in it: an event must be recorded on a stream of its own
  // context. Does nothing with plain streams. Throws RunError.
  void bind_thread(int stage) const;

  // bind_thread for a scope of the calling thread, restoring its context after.
  class ThreadBinding {
   public:
    ThreadBinding(const SmPartitions& partitions, int stage);
    ~ThreadBinding();
    ThreadBinding(const ThreadBinding&) = delete;
    ThreadBinding& operator=(const ThreadBinding&) = delete;

   private:
    const SmPartitions* partitions_;
    void* previous_ = nullptr;  // the CUcontext current before
  };

  // Why there are no green contexts ("" when there are).
  [[nodiscard]] const std::string& why() const { return why_; }
  // What the driver changed in the planned split, e.g. "the driver made
  // partitions of 24 SMs where 16 were planned" ("" when nothing).
  [[nodiscard]] const std::string& note() const { return note_; }
  // The split in use (sms_per_stage 0 with plain streams) and the device's SM count.
  [[nodiscard]] const SmSplit& split() const { return split_; }
  [[nodiscard]] int total_sms() const { return total_sms_; }

 private:
  struct GreenContexts;  // the driver handles; defined where the driver types are visible
  SmPartitions() = default;
  void destroy() noexcept;

  std::vector<Stream> streams_;  // destroyed before the contexts they live in
  std::unique_ptr<GreenContexts> contexts_;
  bool green_ = false;
  std::string why_;
  std::string note_;
  SmSplit split_;
  int total_sms_ = 0;
};

}  // namespace gpipe::exec::cuda
