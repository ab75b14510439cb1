// A tied embedding's exchange in the IR (schedules/tied_gradient.hpp):
// lowering puts REDUCE_GRAD and WAIT_REDUCE_GRAD of the first and the last
// stage before their STEPs; each wait needs the other end's REDUCE_GRAD;
// validation wants them in a lowered schedule; the IR JSON keeps the flag.
#include <gtest/gtest.h>

#include "schedules/dependencies.hpp"
#include "schedules/generate.hpp"
#include "schedules/ir_json.hpp"
#include "schedules/lower.hpp"
#include "schedules/tied_gradient.hpp"
#include "schedules/validate.hpp"
#include "tests/error_of.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using gpipe::testing::error_of;
using testing::program;

Schedule tied_generated(const char* name, int ranks, int microbatches) {
  ScheduleOptions o;
  o.num_ranks = ranks;
  o.num_microbatches = microbatches;
  Schedule s = generate(name, o);
  s.tied_embedding = true;
  return s;
}

TEST(TiedGradient, LoweringExchangesBeforeTheSteps) {
  const Schedule s = lower(tied_generated("gpipe", 2, 1));
  EXPECT_EQ(program(s, 0), "0F0 0SEND_F0 0RECV_B0 0B0 0REDUCE_GRAD 0WAIT_REDUCE_GRAD 0STEP");
  EXPECT_EQ(program(s, 1), "1RECV_F0 1F0 1B0 1SEND_B0 1REDUCE_GRAD 1WAIT_REDUCE_GRAD 1STEP");
  // A middle stage ties nothing.
  const Schedule three = lower(tied_generated("gpipe", 3, 1));
  EXPECT_EQ(program(three, 1), "1RECV_F0 1F0 1SEND_F0 1RECV_B0 1B0 1SEND_B0 1STEP");
}

TEST(TiedGradient, EndsOnOneRankPostEachAfterItsLastBackward) {
  // ZBV, K = 2: rank 0 holds stages 0 and 3. Each stage posts its gradient
  // as soon as it is final; both wait at the end.
  const Schedule s = lower(tied_generated("zbv", 2, 2));
  const std::string p = program(s, 0);
  EXPECT_NE(p.find("3W1 3REDUCE_GRAD 0RECV_B0"), std::string::npos) << p;
  EXPECT_TRUE(p.ends_with("0W1 0REDUCE_GRAD 0WAIT_REDUCE_GRAD 3WAIT_REDUCE_GRAD 0STEP 3STEP")) << p;
  EXPECT_TRUE(program(s, 1).ends_with("1STEP 2STEP")) << program(s, 1);
  validate(s);
}

TEST(TiedGradient, OneStageHasNothingToExchange) {
  const Schedule s = lower(tied_generated("gpipe", 1, 2));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0B1 0B0 0STEP");
  EXPECT_FALSE(tied_partner(s, Stage{0}));
}

TEST(TiedGradient, EachWaitNeedsTheOtherEndsGradient) {
  const Schedule s = lower(tied_generated("1f1b", 3, 2));
  EXPECT_EQ(tied_partner(s, Stage{0}), Stage{2});
  EXPECT_EQ(tied_partner(s, Stage{2}), Stage{0});
  EXPECT_FALSE(tied_partner(s, Stage{1}));
  const Dependencies deps(s);
  EXPECT_EQ(deps.of(parse_action("0WAIT_REDUCE_GRAD")), std::vector<Action>{parse_action("2REDUCE_GRAD")});
  EXPECT_EQ(deps.of(parse_action("2REDUCE_GRAD")),
            (std::vector<Action>{parse_action("2B0"), parse_action("2B1")}));
  // Without the tie, the same actions only follow their rank (torch's FSDP housekeeping).
  Schedule untied = s;
  untied.tied_embedding = false;
  EXPECT_TRUE(Dependencies(untied).of(parse_action("0WAIT_REDUCE_GRAD")).empty());
}

TEST(TiedGradient, ALoweredScheduleMustHoldTheExchange) {
  Schedule s = lower(tied_generated("gpipe", 2, 1));
  validate(s);
  auto& rank1 = s.ranks[1];
  rank1.erase(std::find(rank1.begin(), rank1.end(), parse_action("1WAIT_REDUCE_GRAD")));
  EXPECT_EQ(error_of([&] { validate(s); }),
            "rank 1: missing 1WAIT_REDUCE_GRAD (the schedule is lowered and its first and last stages share a "
            "matrix)");
}

// A stage that posts its gradient before its backward has made it: a deadlock.
TEST(TiedGradient, PostingBeforeTheBackwardIsACycle) {
  Schedule s = lower(tied_generated("gpipe", 2, 1));
  ASSERT_EQ(program(s, 0), "0F0 0SEND_F0 0RECV_B0 0B0 0REDUCE_GRAD 0WAIT_REDUCE_GRAD 0STEP");
  s.ranks[0] = {parse_action("0F0"), parse_action("0SEND_F0"), parse_action("0REDUCE_GRAD"),
                parse_action("0WAIT_REDUCE_GRAD"), parse_action("0RECV_B0"), parse_action("0B0"),
                parse_action("0STEP")};
  const auto errors = find_errors(s);
  ASSERT_EQ(errors.size(), 1u) << errors[0].message;
  EXPECT_EQ(errors[0].kind, ScheduleError::Kind::cycle) << errors[0].message;
}

TEST(TiedGradient, TheIrJsonKeepsTheFlag) {
  const Schedule s = lower(tied_generated("1f1b", 2, 2));
  const Schedule back = schedule_from_json(to_json(s), "test");
  EXPECT_TRUE(back.tied_embedding);
  EXPECT_EQ(back, s);
  Schedule plain = s;
  plain.tied_embedding = false;
  EXPECT_FALSE(to_json(plain).contains("tied_embedding"));
  nlohmann::json bad = to_json(s);
  bad["tied_embedding"] = 1;
  EXPECT_EQ(error_of([&] { (void)schedule_from_json(bad, "f.json"); }),
            "f.json: tied_embedding: expected true or false");
}

}  // namespace
}  // namespace gpipe::schedules
