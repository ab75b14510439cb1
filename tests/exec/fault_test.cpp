#include "exec/runtime/fault.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec {
namespace {

using schedules::ActionKind;
using schedules::make_action;

TEST(FaultInjection, ParsesRankAndAction) {
  const FaultInjection fault = parse_fault_injection("2:2F3");
  EXPECT_EQ(fault.rank.value, 2);
  EXPECT_EQ(fault.action, make_action(2, ActionKind::F, 3));
  EXPECT_EQ(fault.kind, FaultInjection::Kind::fail);
  EXPECT_EQ(to_string(fault), "2:2F3");
}

TEST(FaultInjection, ParsesStall) {
  const FaultInjection fault = parse_fault_injection("0:0RECV_B1:stall");
  EXPECT_EQ(fault.action, make_action(0, ActionKind::RECV_B, 1));
  EXPECT_EQ(fault.kind, FaultInjection::Kind::stall);
  EXPECT_EQ(to_string(fault), "0:0RECV_B1:stall");
}

TEST(FaultInjection, ParsesOutOfMemory) {
  const FaultInjection fault = parse_fault_injection("1:1F0:oom");
  EXPECT_EQ(fault.kind, FaultInjection::Kind::out_of_memory);
  EXPECT_EQ(to_string(fault), "1:1F0:oom");
}

TEST(FaultInjection, RejectsMalformedText) {
  for (const char* text : {"2F3", "x:2F3", "-1:2F3", "2:", "2:2Q3", "2:2F3:hang", ":2F3"}) {
    const std::string error = gpipe::testing::error_of([&] { (void)parse_fault_injection(text); });
    EXPECT_NE(error.find("--inject-fault"), std::string::npos) << text << ": " << error;
    EXPECT_NE(error.find(text), std::string::npos) << text << ": " << error;
  }
}

}  // namespace
}  // namespace gpipe::exec
