// check_step_fits: a step whose compute and transfers add up past what integer
// ns hold is refused. Far below the limit a bound per micro-batch size lets
// it through without adding up every action; near it, the exact sum decides,
// to the micro-batch.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "schedules/generate.hpp"
#include "sim/profile_costs.hpp"
#include "sim/step_bounds.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::sim {
namespace {

using gpipe::testing::error_of;

// GPipe on 2 stages of 2 layers of 1e12 us forward and backward each, a free
// link: per micro-batch and stage 2 F + B + I + W = 8e15 ns, 1.6e16 ns for both.
void check_gpipe(int microbatches, int sized_microbatches) {
  const auto profile = testing::uniform_profile(4, 1e12, 1e12);
  schedules::ScheduleOptions o;
  o.num_ranks = 2;
  o.num_microbatches = microbatches;
  const schedules::Schedule s = schedules::generate_gpipe(o);
  const std::vector<int> layers = {2, 2};
  const ProfileCosts costs(profile, layers, std::vector<int>(static_cast<std::size_t>(sized_microbatches), 1));
  check_step_fits(s, costs, 0.0, 1.0);
}

TEST(StepBounds, TheExactSumDecidesAtTheLimit) {
  EXPECT_EQ(error_of([] { check_gpipe(1, 1); }), "no error");
  EXPECT_EQ(error_of([] { check_gpipe(287, 287); }), "no error");  // 4.592e18 ns, under 4.6e18
  EXPECT_EQ(error_of([] { check_gpipe(288, 288); }),                 // 4.608e18 ns
            "this step's compute and transfers add up to 4.61e+09 s, past the 4.6e+09 s (146 years) the "
            "simulator's integer ns hold");
}

TEST(StepBounds, CostsThatDoNotCoverTheScheduleStillThrow) {
  // Two micro-batches asked of costs that know one: the lookup's error, as before the bound.
  EXPECT_THROW(check_gpipe(2, 1), std::out_of_range);
}

}  // namespace
}  // namespace gpipe::sim
