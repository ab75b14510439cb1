// Schedule generators: pure functions from (K, M, options) to the compute
// actions of each rank. Lowering (lower.hpp) adds R, comm and STEP afterwards.
//
// GPipe, K=4, M=4, backward order reverse (the paper's Figure 2c), one column
// per unit of time:
//
//   rank 0: F0 F1 F2 F3                         B3 B2 B1 B0
//   rank 1:    F0 F1 F2 F3                   B3 B2 B1 B0
//   rank 2:       F0 F1 F2 F3             B3 B2 B1 B0
//   rank 3:          F0 F1 F2 F3 B3 B2 B1 B0
//
// 1F1B (PipeDream-flush), K=4, M=6: rank r runs min(M, K-r) forwards, then
// alternates one backward and one forward, then drains the backwards:
//
//   rank 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5
//   rank 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// Order of GPipe's backwards: reverse runs B of M-1 first (GPipe Figure 2c),
// forward runs B0 first (torch.distributed.pipelining).
enum class BackwardOrder { reverse, forward };

[[nodiscard]] std::string_view to_string(BackwardOrder order);
[[nodiscard]] std::optional<BackwardOrder> parse_backward_order(std::string_view text);

struct ScheduleOptions {
  int num_ranks = 1;        // K: the pipeline's ranks
  // V: the model is cut into K x V stages (interleaved and V-shaped families).
  // 0 means the family's own: 1 for gpipe and 1f1b, 2 for the others.
  int stages_per_rank = 0;
  int num_microbatches = 1;
  BackwardOrder backward_order = BackwardOrder::reverse;  // gpipe only
  RecomputePolicy recompute = RecomputePolicy::never;
};

// The skeleton every generator fills: K ranks, one stage each, no actions yet.
// Throws InputError for K < 1 or M < 1, naming the flag.
[[nodiscard]] Schedule empty_schedule(std::string_view name, const ScheduleOptions& options);

[[nodiscard]] Schedule generate_gpipe(const ScheduleOptions& options);
[[nodiscard]] Schedule generate_1f1b(const ScheduleOptions& options);

// The generator named `name` ("gpipe", "1f1b", ...; the several-stages-per-rank
// families are declared in generators/multi_stage.hpp); throws InputError for
// an unknown name, a configuration that cannot exist (K < 1, M < 1) or one the
// family refuses (a V it cannot take, or torch's rules for M).
[[nodiscard]] Schedule generate(std::string_view name, const ScheduleOptions& options);

// Whether the family `name` takes a V of the caller's choice (the
// interleaved ones: any V of 2 or more) rather than a fixed one; false for an
// unknown name.
[[nodiscard]] bool takes_stages_per_rank(std::string_view name);

// The names generate() accepts ("gpipe", "1f1b", ...), for flag checks, help texts
// and error messages: every command line takes its list from here.
[[nodiscard]] std::vector<std::string> schedule_names();

}  // namespace gpipe::schedules
