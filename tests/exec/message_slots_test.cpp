// MessageSlots (exec/runtime/message_slots.hpp), where a worker keeps data
// between its actions: each value is put once under its MessageTag and taken
// once by it; a second put, a take of what is not there and a value left at
// the end of a step are logic errors naming the message (and the action).
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "exec/runtime/message_slots.hpp"
#include "schedules/action.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec {
namespace {

using schedules::Microbatch;
using schedules::parse_action;

MessageTag tag(int step, MessageKind kind, int stage, int microbatch) {
  return {step, kind, schedules::Stage{stage}, Microbatch{microbatch}};
}

using gpipe::testing::logic_error_of;

TEST(MessageSlots, EachValueIsTakenByItsOwnTag) {
  MessageSlots<std::string> slots;
  // Tags that differ in one field each.
  slots.put(tag(0, MessageKind::activation, 1, 2), "a 1 2");
  slots.put(tag(1, MessageKind::activation, 1, 2), "a 1 2, step 1");
  slots.put(tag(0, MessageKind::gradient, 1, 2), "g 1 2");
  slots.put(tag(0, MessageKind::activation, 0, 2), "a 0 2");
  slots.put(tag(0, MessageKind::activation, 1, 3), "a 1 3");
  const auto take = [&](const MessageTag& t) { return slots.take(t, parse_action("2F2")); };
  EXPECT_EQ(take(tag(0, MessageKind::gradient, 1, 2)), "g 1 2");
  EXPECT_EQ(take(tag(0, MessageKind::activation, 1, 3)), "a 1 3");
  EXPECT_EQ(take(tag(1, MessageKind::activation, 1, 2)), "a 1 2, step 1");
  EXPECT_EQ(take(tag(0, MessageKind::activation, 1, 2)), "a 1 2");
  EXPECT_EQ(take(tag(0, MessageKind::activation, 0, 2)), "a 0 2");
  EXPECT_NO_THROW(slots.expect_empty());
}

TEST(MessageSlots, AValueProducedTwiceIsAnError) {
  MessageSlots<std::string> slots;
  slots.put(tag(0, MessageKind::activation, 1, 2), "first");
  EXPECT_EQ(logic_error_of([&] { slots.put(tag(0, MessageKind::activation, 1, 2), "second"); }),
            "the activation of stage 1 micro-batch 2 (step 0) was produced twice");
  EXPECT_EQ(slots.take(tag(0, MessageKind::activation, 1, 2), parse_action("2F2")), "first");
}

TEST(MessageSlots, ATakeOfWhatIsNotHereNamesTheActionAndTheMessage) {
  MessageSlots<std::string> slots;
  EXPECT_EQ(logic_error_of([&] { (void)slots.take(tag(3, MessageKind::gradient, 2, 0), parse_action("1B0")); }),
            "1B0 needs the gradient of stage 2 micro-batch 0 (step 3), which is not here");
  // A value is taken once.
  slots.put(tag(0, MessageKind::activation, 0, 1), "once");
  EXPECT_EQ(slots.take(tag(0, MessageKind::activation, 0, 1), parse_action("1F1")), "once");
  EXPECT_EQ(logic_error_of([&] { (void)slots.take(tag(0, MessageKind::activation, 0, 1), parse_action("0SEND_F1")); }),
            "0SEND_F1 needs the activation of stage 0 micro-batch 1 (step 0), which is not here");
}

TEST(MessageSlots, AValueLeftAtTheEndOfAStepIsNamed) {
  MessageSlots<std::string> slots;
  slots.put(tag(0, MessageKind::gradient, 2, 1), "left");
  slots.put(tag(0, MessageKind::activation, 3, 0), "left too");
  // The first in tag order: the activation.
  EXPECT_EQ(logic_error_of([&] { slots.expect_empty(); }),
            "the activation of stage 3 micro-batch 0 (step 0) was produced but never consumed");
  (void)slots.take(tag(0, MessageKind::activation, 3, 0), parse_action("4F0"));
  EXPECT_EQ(logic_error_of([&] { slots.expect_empty(); }),
            "the gradient of stage 2 micro-batch 1 (step 0) was produced but never consumed");
  slots.clear();
  EXPECT_NO_THROW(slots.expect_empty());
}

}  // namespace
}  // namespace gpipe::exec
