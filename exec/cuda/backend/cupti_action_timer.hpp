// The CUPTI timer: every bracketed action runs under its own external
// correlation id, so its GPU interval is [earliest start, latest end) of the
// kernels and copies it launched, on the GPU's own timestamps
// (cupti::build_gpu_timeline). The origin of a step is the earliest CUPTI
// timestamp read on the host as the ranks leave the step barrier, so the
// launch latency of a step's first kernel counts, as it does in training.
//
// The source collects for the whole run; the trainer starts it before the
// workers and calls finish() after they have stopped. Unmeasured steps push
// no ids, so their work is simply unclaimed.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "exec/cuda/backend/device_timer.hpp"
#include "exec/cuda/cupti/activity_source.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"

namespace gpipe::exec::cuda {

class CuptiActionTimer final : public DeviceTimer {
 public:
  // `now_ns` reads the source's clock on the host (cupti_timestamp_ns for
  // CUPTI); `measured_steps` slots are kept.
  CuptiActionTimer(int num_ranks, cupti::ActivitySource& source, std::function<std::int64_t()> now_ns,
                   int measured_steps);

  void start_step(schedules::Rank rank, int slot, Clock::time_point start) override;
  void begin_on(const ActionMark& mark, StreamHandle stream) override;
  void end_on(const ActionMark& mark, StreamHandle stream) override;
  [[nodiscard]] MeasuredIntervals intervals(int slot) override;
  [[nodiscard]] const char* name() const override { return "cupti"; }

  // Stops the source and keeps its records; call once the workers have stopped.
  void finish();
  [[nodiscard]] const cupti::ActivityRecords& records() const { return records_; }
  // The ids of step `slot` and its origin on the source's clock, for the kernel events.
  [[nodiscard]] const cupti::ExternalIdMap& ids(int slot) const;
  [[nodiscard]] std::int64_t origin_ns(int slot) const;
  // What build_gpu_timeline counted for step `slot` (dropped, unmatched...).
  [[nodiscard]] cupti::GpuTimeline gpu_timeline(int slot) const;

  // The id of action `index` of `rank` in step `slot`: unique over the run,
  // and readable in a trace (slot * 10^9 + rank * 10^6 + index + 1).
  [[nodiscard]] static std::uint64_t external_id(schedules::Rank rank, int slot, std::size_t index);

 private:
  struct Slot {
    cupti::ExternalIdMap ids;
    std::int64_t origin_ns = -1;
  };
  [[nodiscard]] Slot& slot(int index);
  [[nodiscard]] const Slot& slot(int index) const;

  cupti::ActivitySource& source_;
  std::function<std::int64_t()> now_ns_;
  mutable std::mutex mutex_;  // the slots are filled by every rank's thread
  std::vector<Slot> slots_;
  cupti::ActivityRecords records_;
  bool finished_ = false;
};

// The kernels and copies of `records` that an id of `ids` claims (and the
// correlation records that say so), for a trace of one step's GPU work.
[[nodiscard]] cupti::ActivityRecords records_of(const cupti::ActivityRecords& records,
                                                const cupti::ExternalIdMap& ids);

}  // namespace gpipe::exec::cuda
