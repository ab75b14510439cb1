// The zero-bubble paper's handcrafted schedules, ZB-H1 and ZB-H2: exact
// action lists (the paper's Figure 3 for K=4, M=8, as drawn in zb_h1.hpp and
// zb_h2.hpp), M < K, what each rank keeps in flight, and validity over a grid.
// Their timing against the paper's closed forms is tests/sim/zero_bubble_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/generators/zb_h1.hpp"
#include "schedules/generators/zb_h2.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using testing::program;

using testing::options;

// The most micro-batches a rank holds at once: forward done, W not yet (a W
// frees what its F kept).
int peak_in_flight(const Schedule& s, int rank) {
  int now = 0;
  int peak = 0;
  for (const Action& a : s.actions(Rank{rank})) {
    if (a.kind == ActionKind::F) peak = std::max(peak, ++now);
    if (a.kind == ActionKind::W || a.kind == ActionKind::B) --now;
  }
  return peak;
}

TEST(GenerateZbH1, PaperFigureThreeTop) {
  const Schedule s = generate_zb_h1(options(4, 8));
  EXPECT_EQ(s.name, "zb-h1");
  EXPECT_EQ(s.num_stages, 4);
  EXPECT_EQ(s.stage_to_rank, one_stage_per_rank(4));
  // Rank r: K-r forwards, r pairs (I, F) whose W waits, (I, W, F), (I, W), the W's that waited.
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7");
  EXPECT_EQ(program(s, 1), "1F0 1F1 1F2 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5 1I3 1W2 1F6 1I4 1W3 1F7 1I5 1W4 1I6 1W5 1I7 1W6 1W7");
  EXPECT_EQ(program(s, 2), "2F0 2F1 2I0 2F2 2I1 2F3 2I2 2W0 2F4 2I3 2W1 2F5 2I4 2W2 2F6 2I5 2W3 2F7 2I6 2W4 2I7 2W5 2W6 2W7");
  EXPECT_EQ(program(s, 3), "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 3W5 3W6 3W7");
}

TEST(GenerateZbH2, PaperFigureThreeBottom) {
  const Schedule s = generate_zb_h2(options(4, 8));
  EXPECT_EQ(s.name, "zb-h2");
  // Rank r: 2(K-r)-1 forwards, 2r pairs (I, F) whose W waits, then as ZB-H1.
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0F3 0F4 0F5 0F6 0I0 0W0 0F7 0I1 0W1 0I2 0W2 0I3 0W3 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7");
  EXPECT_EQ(program(s, 1), "1F0 1F1 1F2 1F3 1F4 1I0 1F5 1I1 1F6 1I2 1W0 1F7 1I3 1W1 1I4 1W2 1I5 1W3 1I6 1W4 1I7 1W5 1W6 1W7");
  EXPECT_EQ(program(s, 2), "2F0 2F1 2F2 2I0 2F3 2I1 2F4 2I2 2F5 2I3 2F6 2I4 2W0 2F7 2I5 2W1 2I6 2W2 2I7 2W3 2W4 2W5 2W6 2W7");
  EXPECT_EQ(program(s, 3), "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3F4 3I4 3F5 3I5 3F6 3I6 3W0 3F7 3I7 3W1 3W2 3W3 3W4 3W5 3W6 3W7");
}

TEST(GenerateZeroBubble, FewerMicrobatchesThanStages) {
  // The warm-up takes every forward there is; the growing pairs stop with them.
  const Schedule h1 = generate_zb_h1(options(4, 2));
  EXPECT_EQ(program(h1, 0), "0F0 0F1 0I0 0W0 0I1 0W1");
  EXPECT_EQ(program(h1, 2), "2F0 2F1 2I0 2W0 2I1 2W1");
  EXPECT_EQ(program(h1, 3), "3F0 3I0 3F1 3I1 3W0 3W1");
  const Schedule h2 = generate_zb_h2(options(3, 3));
  EXPECT_EQ(program(h2, 0), "0F0 0F1 0F2 0I0 0W0 0I1 0W1 0I2 0W2");
  EXPECT_EQ(program(h2, 1), "1F0 1F1 1F2 1I0 1W0 1I1 1W1 1I2 1W2");
  EXPECT_EQ(program(h2, 2), "2F0 2I0 2F1 2I1 2F2 2I2 2W0 2W1 2W2");
}

TEST(GenerateZeroBubble, SingleStageRunsEachMicrobatchThrough) {
  for (const char* name : {"zb-h1", "zb-h2"}) {
    EXPECT_EQ(program(generate(name, options(1, 3)), 0), "0F0 0I0 0W0 0F1 0I1 0W1 0F2 0I2 0W2") << name;
  }
}

TEST(GenerateZeroBubble, InFlightIsOneFOneBsPeakForH1AndTwiceLessOneForH2) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 20; ++m) {
      const Schedule h1 = generate_zb_h1(options(k, m));
      const Schedule h2 = generate_zb_h2(options(k, m));
      const Schedule one_f_one_b = generate_1f1b(options(k, m));
      for (int r = 0; r < k; ++r) {
        // ZB-H1 lets every rank hold what 1F1B's rank 0 holds, and no more.
        EXPECT_EQ(peak_in_flight(h1, r), std::min(m, k)) << "K=" << k << " M=" << m << " rank " << r;
        EXPECT_LE(peak_in_flight(h1, r), peak_in_flight(one_f_one_b, 0));
        EXPECT_EQ(peak_in_flight(h2, r), std::min(m, 2 * k - 1)) << "K=" << k << " M=" << m << " rank " << r;
      }
    }
  }
}

TEST(GenerateZeroBubble, EveryScheduleIsValidComputeOnlyAndLowered) {
  int checked = 0;
  for (const char* name : {"zb-h1", "zb-h2"}) {
    for (int k = 1; k <= 7; ++k) {
      for (int m = 1; m <= 16; ++m) {
        for (auto policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
          const Schedule compute = generate(name, options(k, m, policy));
          ASSERT_EQ(compute.total_actions(), 3 * k * m) << name;
          for (const Schedule& s : {compute, lower(compute)}) {
            const auto errors = find_errors(s);
            EXPECT_TRUE(errors.empty()) << name << " K=" << k << " M=" << m << " lowered=" << s.is_lowered()
                                        << ": " << errors.front().message;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 7 * 16 * 3 * 2);
}

TEST(GenerateZeroBubble, OneStagePerRankOnly) {
  ScheduleOptions o = options(2, 4);
  o.stages_per_rank = 2;
  try {
    (void)generate("zb-h2", o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--stages-per-rank 2 does not fit --schedule zb-h2: it takes exactly 1 (one stage per rank)");
  }
  EXPECT_THROW((void)generate_zb_h1(options(0, 4)), InputError);
  EXPECT_THROW((void)generate_zb_h1(options(2, 0)), InputError);
}

}  // namespace
}  // namespace gpipe::schedules
