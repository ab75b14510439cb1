// The action timer of a CUDA run: CUPTI when asked for and it can collect
// (it cannot where another profiler holds it), else CUDA events, with the
// reason in note.
#pragma once

#include <memory>
#include <string>

#include "exec/cuda/backend/cupti_action_timer.hpp"
#include "exec/cuda/backend/device_timer.hpp"
#include "exec/cuda/backend/event_action_timer.hpp"
#include "exec/cuda/cupti/cupti_activity_source.hpp"

namespace gpipe::exec::cuda {

enum class ActionTiming : std::uint8_t { cupti, events };

struct RunTiming {
  std::unique_ptr<cupti::CuptiActivitySource> source;
  std::unique_ptr<CuptiActionTimer> cupti;  // set when CUPTI collects
  std::unique_ptr<EventActionTimer> events;  // set otherwise
  std::string note;                         // why CUPTI was not used, when it was asked for

  [[nodiscard]] DeviceTimer& timer() {
    return cupti ? static_cast<DeviceTimer&>(*cupti) : static_cast<DeviceTimer&>(*events);
  }
};

// Starts collecting (CUPTI) for a run of `num_ranks` ranks in this process.
[[nodiscard]] RunTiming make_run_timing(ActionTiming wanted, int num_ranks, int measured_steps);

}  // namespace gpipe::exec::cuda
