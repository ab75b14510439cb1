// ZB-H2, the zero-bubble paper's zero-bubble handcrafted schedule (Qi et al.,
// ICLR 2024, section 3.2 and Figure 3, bottom): more forwards in the warm-up,
// 2(K-r)-1 on rank r, enough to cover the wait for its first gradient, and
// then the phases of zb_phases.hpp with 2r growing pairs, so every rank holds
// up to 2K-1 micro-batches, about twice 1F1B's peak (K). The W's put off to
// the tail turn 1F1B's trapezoid into a parallelogram: each rank, once
// started, never waits.
//
// K=4, M=8, with T_F = T_I = T_W and free links, one column per unit of time
// (the action in a column is the one that ends there):
//
//   rank 0: F0 F1 F2 F3 F4 F5 F6 I0 W0 F7 I1 W1 I2 W2 I3 W3 I4 W4 I5 W5 I6 W6 I7 W7
//   rank 1: .. F0 F1 F2 F3 F4 I0 F5 I1 F6 I2 W0 F7 I3 W1 I4 W2 I5 W3 I6 W4 I7 W5 W6 W7
//   rank 2: .. .. F0 F1 F2 I0 F3 I1 F4 I2 F5 I3 F6 I4 W0 F7 I5 W1 I6 W2 I7 W3 W4 W5 W6 W7
//   rank 3: .. .. .. F0 I0 F1 I1 F2 I2 F3 I3 F4 I4 F5 I5 F6 I6 W0 F7 I7 W1 W2 W3 W4 W5 W6 W7
//
// The paper's bubble, counted per rank from its first action to its last,
// is (K-1)(T_F + T_I - 2 T_W): zero when T_F + T_I = 2 T_W. It holds exactly
// for M >= 2K-1 and T_W <= min(T_F, T_I) (tests/sim/zero_bubble_test.cpp).
// The step time still has the (K-1) T_F it takes the first forward to reach
// the last rank.
#pragma once

#include "schedules/generate.hpp"

namespace gpipe::schedules {

// Throws InputError for K < 1, M < 1, or more than one stage per rank.
[[nodiscard]] Schedule generate_zb_h2(const ScheduleOptions& options);

}  // namespace gpipe::schedules
