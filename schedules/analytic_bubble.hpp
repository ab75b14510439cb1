// Each schedule family's closed-form bubble, from its paper, in Megatron's
// convention (bubble time over ideal time, per rank, with uniform stages and
// free links): what gpipe prints beside the simulated or measured bubble.
//
//   gpipe, 1f1b                     (K-1) / M                  GPipe; PipeDream-flush
//   interleaved-1f1b, looped-bfs    (K-1) / (V M)              Megatron-LM (Narayanan et al. 2021)
//   zb-h1                           (K-1)(T_F + T_I - T_W) / (M T)   Zero Bubble (Qi et al. 2024)
//   interleaved-zb, dualpipev       (K-1)(T_F + T_I - T_W) / (V M T)  ZB-H1's form, per stage
//                                   (checked exact on the simulator for M >= K, and
//                                   M >= 2K for dualpipev, with T_W <= T_I)
// with T = T_F + T_I + T_W, the mean time of a micro-batch's forward and
// backward on a stage (T_I + T_W = T_B where the backward is not split). In
// the zero-bubble paper's own notation T_B is the input-gradient part, so ZB-H1
// is its (p-1)(T_F+T_B-T_W). ZB-H2's (p-1)(T_F+T_B-2T_W) is not a step's
// bubble: its zero needs steps run back to back with the optimizer's sync
// bypassed, while one step still waits (K-1) T_F for the first forward to
// reach the last rank; so zb-h2 has no closed form here.
// The bubble fraction is then x / (1 + x): (K-1)/(M+K-1) for GPipe.
// T_F, T_I, T_W are the mean times of one stage's actions. Families with no
// exact closed form (zb-h2, zbv, zb-auto, schedules read from files) have none:
// std::nullopt.
#pragma once

#include <optional>
#include <string_view>

namespace gpipe::schedules {

// Mean durations of a stage's compute actions, in any one unit.
struct MeanComputeTimes {
  double forward = 0;   // T_F
  double backward = 0;  // T_B = T_I + T_W: a full backward, or its two halves
  double weight = 0;    // T_W, 0 where the backward is not split
};

struct AnalyticBubble {
  double time_over_ideal = 0;  // Megatron's convention
  double fraction = 0;         // of the step: x / (1 + x)
};

// K ranks, V stages per rank, M micro-batches.
[[nodiscard]] std::optional<AnalyticBubble> analytic_bubble(std::string_view family, int num_ranks,
                                                            int stages_per_rank, int num_microbatches,
                                                            const MeanComputeTimes& times);

// The family's forms as text, for tables and plots; empty where it has none.
struct AnalyticForms {
  std::string_view fraction;         // "(K-1)/(M+K-1)"
  std::string_view time_over_ideal;  // "(K-1)/M"
};
[[nodiscard]] AnalyticForms analytic_bubble_forms(std::string_view family);

}  // namespace gpipe::schedules
