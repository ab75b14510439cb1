// The action text form: parse and print, round trip, and clear errors.
#include <gtest/gtest.h>

#include "schedules/action.hpp"
#include "schedules/error.hpp"

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

TEST(Action, EveryKindRoundTrips) {
  for (int k = 0; k < kNumActionKinds; ++k) {
    const auto kind = static_cast<ActionKind>(k);
    const Action a = make_action(13, kind, kind == ActionKind::STEP ? 0 : 42);
    EXPECT_EQ(parse_action(to_string(a)), a) << to_string(a);
  }
}

TEST(Action, RejectsMalformedText) {
  for (const char* bad : {"", "F0", "2X0", "2F", "2F0x", "2STEP3", "-1F0", "2f0", "2SEND0",
                          "99999999999F0"}) {
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
