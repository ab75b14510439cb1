// The schedule IR's text form for people: a one-line summary, the time-aligned
// grid that shows the fill and drain, and, once lowered, each rank's program.
#pragma once

#include <string>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// "gpipe: 4 ranks, 4 stages, 8 micro-batches, recompute never, compute only"
[[nodiscard]] std::string summary(const Schedule& schedule);

[[nodiscard]] std::string to_text(const Schedule& schedule);

}  // namespace gpipe::schedules
