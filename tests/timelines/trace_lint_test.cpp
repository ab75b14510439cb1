// The trace lint: quiet on a trace that follows Perfetto's rules, and one
// line for each way of breaking them (timelines/trace_lint.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelines/chrome_trace.hpp"
#include "timelines/trace_lint.hpp"

namespace gpipe::timelines {
namespace {

using nlohmann::json;

json slice(int pid, int tid, double ts, double dur, const char* name = "0F0") {
  return {{"name", name}, {"cat", "compute"}, {"ph", "X"}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
}
json flow(const char* ph, int id, int pid, int tid, double ts) {
  return {{"name", "0SEND_F0"}, {"cat", "flow"}, {"ph", ph}, {"bp", "e"}, {"id", id},
          {"pid", pid},        {"tid", tid},    {"ts", ts}};
}

// A send on rank 0 [10, 12] and its receive on rank 1 [5, 20], which began waiting before it.
json good() {
  return {{"traceEvents",
           {slice(0, 1, 0, 10), slice(0, 2, 10, 2, "0SEND_F0"), slice(1, 3, 5, 15, "1RECV_F0"),
            slice(1, 1, 20, 10, "1F0"), flow("s", 0, 0, 2, 10), flow("f", 0, 1, 3, 10),
            {{"name", "activation memory"}, {"ph", "C"}, {"pid", 0}, {"ts", 0}, {"args", {{"bytes", 100}}}},
            {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "compute"}}}}}}};
}

std::string lint_one(const json& trace) {
  const std::vector<std::string> found = lint_chrome_trace(trace);
  if (found.size() != 1) {
    std::string all;
    for (const auto& f : found) all += f + "\n";
    ADD_FAILURE() << "expected one finding, got " << found.size() << ":\n" << all;
    return {};
  }
  return found.front();
}

TEST(TraceLint, AGoodTraceIsQuiet) { EXPECT_TRUE(lint_chrome_trace(good()).empty()); }

TEST(TraceLint, TidZeroMergesIntoTheMainThread) {
  json t = good();
  t["traceEvents"][0]["tid"] = 0;
  EXPECT_EQ(lint_one(t), "traceEvents[0]: tid 0 is not an integer >= 1 (Perfetto reads tid 0 as none, and moves "
                         "the event to the thread tid == pid)");
}

TEST(TraceLint, PartiallyOverlappingSlicesOnOneThread) {
  json t = good();
  t["traceEvents"].push_back(slice(0, 1, 5, 10));  // [5, 15] against [0, 10]
  EXPECT_EQ(lint_one(t), "traceEvents[8]: slice on pid 0 tid 1 overlaps traceEvents[0] without nesting (Perfetto "
                         "drops it: slice_drop_overlapping_complete_event)");
  json nested = good();
  nested["traceEvents"].push_back(slice(0, 1, 2, 3));  // [2, 5] inside [0, 10]
  nested["traceEvents"].push_back(slice(0, 1, 10, 1));  // touching at 10
  EXPECT_TRUE(lint_chrome_trace(nested).empty());
}

TEST(TraceLint, AFlowThatEndsBeforeItStarts) {
  json t = good();
  t["traceEvents"][5]["ts"] = 6;  // inside the receive, before the send's s at 10
  EXPECT_EQ(lint_one(t), "traceEvents[5]: flow 0 ends at 6.000 us, before it starts at 10.000 us (Perfetto: "
                         "flow_end_without_start, the arrow is dropped)");
}

TEST(TraceLint, AFlowMustBindToItsOwnSliceAndBeWhole) {
  json unbound = good();
  unbound["traceEvents"][5].erase("bp");
  EXPECT_NE(lint_one(unbound).find("without \"bp\": \"e\""), std::string::npos);
  json after = good();
  after["traceEvents"][4]["ts"] = 13;  // after the send [10, 12] ended
  after["traceEvents"][5]["ts"] = 13;
  EXPECT_EQ(lint_one(after), "traceEvents[4]: flow 0 at 13.000 us is in no slice of pid 0 tid 2 (Perfetto: "
                             "flow_no_enclosing_slice)");
  json elsewhere = good();
  elsewhere["traceEvents"][4]["tid"] = 4;  // a thread with no slice
  EXPECT_NE(lint_one(elsewhere).find("flow 0 at 10.000 us is in no slice of pid 0 tid 4"), std::string::npos);
  json half = good();
  half["traceEvents"].erase(5);
  EXPECT_EQ(lint_one(half), "flow 0: an s without its f");
  json twice = good();
  twice["traceEvents"].push_back(flow("s", 0, 0, 2, 11));
  EXPECT_EQ(lint_one(twice), "traceEvents[8]: flow 0 has a second s (Perfetto: flow_duplicate_id)");
}

// Found by tests/fuzz/trace_fuzz: a string field holding a number made the
// lint throw nlohmann's type_error. A wrong type is a finding, never a throw.
TEST(TraceLint, FieldsOfTheWrongTypeAreFindingsNotThrows) {
  json t = good();
  t["traceEvents"][4]["cat"] = 7;
  t["traceEvents"][5]["bp"] = 1;
  t["traceEvents"][7]["name"] = 3;
  std::vector<std::string> found;
  EXPECT_NO_THROW(found = lint_chrome_trace(t));
  EXPECT_EQ(found.size(), 3U);  // the f's bp; the s and the f no longer pair
}

TEST(TraceLint, CountersAreFiniteNumbersAndNamesAreOnce) {
  json t = good();
  t["traceEvents"][6]["args"]["bytes"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(lint_one(t), "traceEvents[6]: counter value args.bytes is not a finite number");
  json text = good();
  text["traceEvents"][6]["args"]["bytes"] = "100";
  EXPECT_EQ(lint_one(text), "traceEvents[6]: counter value args.bytes is not a finite number");
  json names = good();
  names["traceEvents"].push_back(names["traceEvents"][7]);
  EXPECT_EQ(lint_one(names), "traceEvents[8]: a second thread_name for pid 0 tid 1");
}

TEST(TraceLint, TheWritersTraceOfAWaitingReceiveIsQuiet) {
  // The case viewers dropped: rank 1's receive starts, waiting, before rank 0's send.
  Timeline tl;
  tl.info.schedule_name = "gpipe";
  tl.info.num_ranks = 2;
  tl.info.num_stages = 2;
  tl.info.num_microbatches = 1;
  tl.info.stage_to_rank = {schedules::Rank{0}, schedules::Rank{1}};
  tl.info.source = "cpu";
  const auto at = [](int rank, const char* text, std::int64_t start, std::int64_t end) {
    const schedules::Action a = schedules::parse_action(text);
    return TimedAction{a, schedules::Rank{rank}, stream_of(a.kind), start, end};
  };
  tl.actions = {at(0, "0F0", 0, 100),        at(0, "0SEND_F0", 100, 101), at(1, "1RECV_F0", 5, 120),
                at(1, "1F0", 120, 200),      at(1, "1B0", 200, 300),      at(1, "1SEND_B0", 300, 302),
                at(0, "0RECV_B0", 101, 310), at(0, "0B0", 310, 400)};
  const json trace = to_chrome_trace(tl);
  EXPECT_TRUE(lint_chrome_trace(trace).empty());
}

}  // namespace
}  // namespace gpipe::timelines
