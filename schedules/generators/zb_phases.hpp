// The shape both of the zero-bubble paper's handcrafted schedules give a rank
// (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 3). The
// backward is split in two: I (the input gradient, which the previous stage
// waits for) and W (the weight gradient, which nobody waits for), so a W can
// be put off to fill a bubble. A rank's list is five phases:
//
//   1. warm-up:   `warmup` forwards;
//   2. growing:   `growing` pairs (I, F) whose W is put off, so the micro-batches
//                 in flight (forward done, W not yet) grow by one a pair;
//   3. steady:    (I, W, F) while forwards remain; the count in flight holds;
//   4. cool-down: (I, W) while input backwards remain;
//   5. drain:     the W's put off in phase 2, filling the bubbles of the tail.
//
// Each kind runs in micro-batch order, and at most warmup + growing
// micro-batches are in flight: a W frees what its F kept (docs/design.md's memory
// rule), so this count is the activation memory, in units of one stage's.
#pragma once

#include <string_view>
#include <vector>

#include "schedules/action.hpp"
#include "schedules/generate.hpp"

namespace gpipe::schedules {

// Appends the five phases for `stage` to `list`. Phases stop early when the
// M forwards run out (M < warmup: the warm-up is all of them).
void append_zero_bubble_phases(std::vector<Action>& list, Stage stage, int num_microbatches, int warmup,
                               int growing);

struct PhaseCounts {
  int warmup = 0;
  int growing = 0;
};

// A schedule of one stage per rank whose rank r runs the five phases with
// counts(r, K). Throws InputError for K < 1, M < 1 or V != 1, naming `name`.
[[nodiscard]] Schedule zero_bubble_schedule(std::string_view name, const ScheduleOptions& options,
                                            PhaseCounts (*counts)(int rank, int num_ranks));

}  // namespace gpipe::schedules
