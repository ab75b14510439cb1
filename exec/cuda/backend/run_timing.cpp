#include "exec/cuda/backend/run_timing.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec::cuda {

RunTiming make_run_timing(ActionTiming wanted, int num_ranks, int measured_steps) {
  RunTiming t;
  if (wanted == ActionTiming::cupti) {
    try {
      t.source = std::make_unique<cupti::CuptiActivitySource>();
      t.source->start();
      t.cupti = std::make_unique<CuptiActionTimer>(num_ranks, *t.source, cupti::cupti_timestamp_ns,
                                                   measured_steps);
      return t;
    } catch (const RunError& e) {
      t.source.reset();
      t.note = fmt::format("CUPTI could not collect ({}); timed with CUDA events", e.what());
    }
  }
  t.events = std::make_unique<EventActionTimer>(num_ranks, measured_steps);
  return t;
}

}  // namespace gpipe::exec::cuda
