// The action text form: parse and print, round trip, and clear errors.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "schedules/action.hpp"
#include "tests/error_of.hpp"

namespace gpipe::schedules {
namespace {

TEST(Action, PrintsTheTextForm) {
  EXPECT_EQ(to_string(make_action(2, ActionKind::F, 0)), "2F0");
  EXPECT_EQ(to_string(make_action(3, ActionKind::B, 7)), "3B7");
  EXPECT_EQ(to_string(make_action(1, ActionKind::R, 4)), "1R4");
  EXPECT_EQ(to_string(make_action(0, ActionKind::SEND_F, 3)), "0SEND_F3");
  EXPECT_EQ(to_string(make_action(1, ActionKind::RECV_B, 2)), "1RECV_B2");
  EXPECT_EQ(to_string(make_action(0, ActionKind::STEP)), "0STEP");
  EXPECT_EQ(to_string(make_action(12, ActionKind::W, 105)), "12W105");
}

TEST(Action, PrintsTorchsKinds) {
  EXPECT_EQ(to_string(make_action(0, ActionKind::WAIT_SEND_F, 3)), "0WAIT_SEND_F3");
  EXPECT_EQ(to_string(make_action(1, ActionKind::WAIT_SEND_B, 2)), "1WAIT_SEND_B2");
  // Stage-level, as torch writes them: no micro-batch.
  EXPECT_EQ(to_string(make_action(0, ActionKind::UNSHARD)), "0UNSHARD");
  EXPECT_EQ(to_string(make_action(3, ActionKind::RESHARD)), "3RESHARD");
  EXPECT_EQ(to_string(make_action(2, ActionKind::REDUCE_GRAD)), "2REDUCE_GRAD");
  EXPECT_EQ(to_string(make_action(2, ActionKind::WAIT_REDUCE_GRAD)), "2WAIT_REDUCE_GRAD");
}

TEST(Action, EveryKindRoundTrips) {
  for (int k = 0; k < kNumActionKinds; ++k) {
    const auto kind = static_cast<ActionKind>(k);
    const Action a = make_action(13, kind, is_stage_level(kind) ? 0 : 42);
    EXPECT_EQ(parse_action(to_string(a)), a) << to_string(a);
  }
}

TEST(Action, ReadsTheOlderBwSpellingAsB) {
  EXPECT_EQ(parse_action("3BW1"), make_action(3, ActionKind::B, 1));
  EXPECT_EQ(to_string(parse_action("3BW1")), "3B1");
}

TEST(Action, KindClasses) {
  EXPECT_TRUE(is_work(ActionKind::STEP));
  EXPECT_TRUE(is_work(ActionKind::R));
  EXPECT_FALSE(is_work(ActionKind::WAIT_SEND_F));
  EXPECT_FALSE(is_work(ActionKind::UNSHARD));
  EXPECT_FALSE(is_work(ActionKind::RECV_B));
  EXPECT_TRUE(is_send_wait(ActionKind::WAIT_SEND_B));
  EXPECT_TRUE(is_housekeeping(ActionKind::WAIT_REDUCE_GRAD));
  EXPECT_FALSE(is_housekeeping(ActionKind::STEP));
  EXPECT_TRUE(is_stage_level(ActionKind::STEP));
  EXPECT_TRUE(is_stage_level(ActionKind::REDUCE_GRAD));
  EXPECT_FALSE(is_stage_level(ActionKind::WAIT_SEND_F));
  EXPECT_FALSE(is_comm(ActionKind::WAIT_SEND_F));  // it blocks the rank's compute stream
}

TEST(Action, ExactErrors) {
  const auto error = [](const char* text) { return gpipe::testing::error_of([&] { (void)parse_action(text); }); };
  const std::string expected = " (expected <stage><KIND><microbatch>, e.g. 2F0, 0SEND_F3, 0STEP)";
  EXPECT_EQ(error("-1F0"), "bad action '-1F0': the stage is negative" + expected);
  EXPECT_EQ(error("1F-2"), "bad action '1F-2': the micro-batch is negative" + expected);
  EXPECT_EQ(error("0UNSHARD3"), "bad action '0UNSHARD3': UNSHARD takes no micro-batch" + expected);
  EXPECT_EQ(error("0WAIT_SEND_F"), "bad action '0WAIT_SEND_F': no micro-batch number" + expected);
  EXPECT_EQ(error("0OVERLAP_F_B1"), "bad action '0OVERLAP_F_B1': unknown kind 'OVERLAP_F_B'" + expected);
}

TEST(Action, RejectsMalformedText) {
  for (const char* bad : {"", "F0", "2X0", "2F", "2F0x", "2STEP3", "-1F0", "2f0", "2SEND0",
                          "99999999999F0", "1RESHARD0", "1WAIT_SEND_F", "1BW", "2F-1"}) {
    EXPECT_THROW((void)parse_action(bad), InputError) << bad;
  }
}

TEST(Action, ErrorNamesTheText) {
  try {
    (void)parse_action("3Q1");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'3Q1'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown kind 'Q'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpipe::schedules
