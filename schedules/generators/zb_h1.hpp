// ZB-H1, the zero-bubble paper's memory-efficient handcrafted schedule
// (Qi et al., ICLR 2024, section 3.1 and Figure 3, top): 1F1B's warm-up, so
// rank r runs min(M, K-r) forwards first, and then the phases of
// zb_phases.hpp with r growing pairs: every rank puts off W's until K
// micro-batches are in flight, rank 0's peak under 1F1B, so the peak
// activation memory over ranks is 1F1B's. The W's put off fill the tail.
//
// K=4, M=8, with T_F = T_I = T_W and free links, one column per unit of time
// (the action in a column is the one that ends there):
//
//   rank 0: F0 F1 F2 F3 .. .. .. I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 W5 I6 W6 I7 W7
//   rank 1: .. F0 F1 F2 .. .. I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7
//   rank 2: .. .. F0 F1 .. I0 F2 I1 F3 I2 W0 F4 I3 W1 F5 I4 W2 F6 I5 W3 F7 I6 W4 I7 W5 W6 W7
//   rank 3: .. .. .. F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7
//
// The paper's bubble, (K-1)(T_F + T_I - T_W) against 1F1B's (K-1)(T_F + T_I + T_W)
// (a third of it when the three are equal), holds exactly for M >= K and
// T_W <= min(T_F, T_I); tests/sim/zero_bubble_test.cpp checks it to the ns.
#pragma once

#include "schedules/generate.hpp"

namespace gpipe::schedules {

// Throws InputError for K < 1, M < 1, or more than one stage per rank.
[[nodiscard]] Schedule generate_zb_h1(const ScheduleOptions& options);

}  // namespace gpipe::schedules
