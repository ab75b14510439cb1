// The Chrome-trace form of a Timeline: its shape (docs/design.md), the exact round
// trip through a file, and the reader's errors, each naming origin and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tests/schedules/test_support.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/metrics.hpp"
#include "timelines/trace_lanes.hpp"

namespace gpipe::timelines {
namespace {

using nlohmann::json;
using schedules::testing::timed;

// Two ranks, three stages (stages 0 and 2 on rank 0), odd and large times.
Timeline sample() {
  Timeline tl;
  tl.info = TimelineInfo{"gpipe",
                         2,
                         3,
                         1,
                         schedules::RecomputePolicy::stage_except_last,
                         {schedules::Rank{0}, schedules::Rank{1}, schedules::Rank{0}},
                         "cuda",
                         "NVIDIA H100 80GB HBM3",
                         64,
                         {123456789, 987654321}};
  const std::int64_t t0 = 1'234'567'891;
  const std::int64_t big = 987'654'321'012'345;  // about 11 days, in ns
  tl.actions = {timed(0, "0F0", t0, t0 + 7),
                timed(0, "0SEND_F0", t0 + 7, t0 + 1'001),
                timed(1, "1RECV_F0", t0 + 7, t0 + 1'001),
                timed(1, "1F0", t0 + 1'001, t0 + 2'003),
                timed(1, "1SEND_F0", t0 + 2'003, t0 + 2'999),
                timed(0, "2RECV_F0", t0 + 2'003, t0 + 2'999),
                timed(0, "2F0", t0 + 2'999, big),
                timed(0, "2B0", big, big + 333'333'333),
                timed(0, "2SEND_B0", big + 333'333'333, big + 333'333'334),
                timed(1, "1RECV_B0", big + 333'333'333, big + 333'333'334),
                timed(1, "1B0", big + 333'333'334, big + 444'444'445),
                timed(1, "1SEND_B0", big + 444'444'445, big + 444'444'446),
                timed(0, "0RECV_B0", big + 444'444'445, big + 444'444'446),
                timed(0, "0R0", big + 444'444'446, big + 444'444'453),
                timed(0, "0B0", big + 444'444'453, big + 444'444'467),
                timed(0, "0STEP", big + 444'444'467, big + 444'444'467),
                timed(0, "2STEP", big + 444'444'467, big + 444'444'501),
                timed(1, "1STEP", big + 444'444'445, big + 444'444'445)};
  tl.memory = {{schedules::Rank{0}, t0, 1'000'000'001},
               {schedules::Rank{1}, t0 + 1'001, 77},
               {schedules::Rank{0}, big, 2'000'000'003},
               {schedules::Rank{0}, big + 444'444'467, 0}};
  return tl;
}

std::string read_error(const json& trace) {
  try {
    (void)timeline_from_chrome_trace(trace, "pred.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::path(::testing::TempDir()) / ("gpipe_chrome_trace_" + name);
}

std::vector<json> events_with(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& ev : trace.at("traceEvents")) {
    if (ev.at("ph") == ph) out.push_back(ev);
  }
  return out;
}

TEST(ChromeTrace, TopLevelShape) {
  const json trace = to_chrome_trace(sample());
  EXPECT_TRUE(trace.at("traceEvents").is_array());
  EXPECT_EQ(trace.at("displayTimeUnit"), "ns");
  const json& g = trace.at("otherData").at("gpipe");
  EXPECT_EQ(g.at("format"), "gpipe-trace");
  EXPECT_EQ(g.at("version"), 2);
  EXPECT_EQ(g.at("schedule"), json({{"name", "gpipe"},
                                    {"num_ranks", 2},
                                    {"num_stages", 3},
                                    {"num_microbatches", 1},
                                    {"recompute", "stage_except_last"},
                                    {"stage_to_rank", {0, 1, 0}}}));
  EXPECT_EQ(g.at("source"), json({{"kind", "cuda"}, {"device", "NVIDIA H100 80GB HBM3"}}));
  EXPECT_EQ(g.at("batch_size"), 64);
  EXPECT_EQ(g.at("static_bytes"), json({123456789, 987654321}));
  EXPECT_EQ(g.at("metrics"), to_json(compute_metrics(sample())));
}

TEST(ChromeTrace, OneCompleteEventPerAction) {
  const json trace = to_chrome_trace(sample());
  const auto xs = events_with(trace, "X");
  ASSERT_EQ(xs.size(), sample().actions.size());
  EXPECT_EQ(xs[0], json({{"name", "0F0"},
                         {"cat", "compute"},
                         {"ph", "X"},
                         {"pid", 0},
                         {"tid", 1},
                         {"ts", 1234567.891},
                         {"dur", 0.007},
                         {"args", {{"stage", 0}, {"microbatch", 0}, {"kind", "F"}}}}));
  EXPECT_EQ(xs[2].at("cat"), "comm");
  EXPECT_EQ(xs[2].at("tid"), 3);
  EXPECT_EQ(xs[2].at("pid"), 1);
  EXPECT_EQ(xs[1].at("tid"), 2);
  EXPECT_EQ(xs[1].at("args").at("kind"), "SEND_F");
}

TEST(ChromeTrace, MetadataNamesRanksWithTheirStagesAndStreams) {
  const json trace = to_chrome_trace(sample());
  std::set<std::string> names;
  for (const auto& ev : events_with(trace, "M")) {
    const std::string what = ev.at("name");
    if (what == "process_name" || what == "thread_name") {
      names.insert(fmt::format("{}:{}:{}", ev.at("pid").get<int>(), ev.value("tid", -1),
                               ev.at("args").at("name").get<std::string>()));
    } else {
      EXPECT_EQ(what, "process_sort_index");
      EXPECT_EQ(ev.at("args").at("sort_index"), ev.at("pid"));
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"0:-1:rank 0 (stages 0, 2)", "1:-1:rank 1 (stage 1)",
                                          "0:1:compute", "0:2:send", "0:3:recv", "1:1:compute",
                                          "1:2:send", "1:3:recv"}));
}

TEST(ChromeTrace, FlowsFromEachSendToItsReceive) {
  const json trace = to_chrome_trace(sample());
  const auto starts = events_with(trace, "s");
  const auto finishes = events_with(trace, "f");
  ASSERT_EQ(starts.size(), 4u);  // 0SEND_F0, 1SEND_F0, 2SEND_B0, 1SEND_B0
  ASSERT_EQ(finishes.size(), 4u);
  std::set<int> ids;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(starts[i].at("id"), finishes[i].at("id"));
    EXPECT_EQ(starts[i].at("bp"), "e");
    EXPECT_EQ(finishes[i].at("bp"), "e");
    EXPECT_EQ(starts[i].at("tid"), 2);
    EXPECT_EQ(finishes[i].at("tid"), 3);
    EXPECT_LE(starts[i].at("ts").get<double>(), finishes[i].at("ts").get<double>());
    ids.insert(starts[i].at("id").get<int>());
  }
  EXPECT_EQ(ids.size(), 4u);
  // 1SEND_F0 (rank 1) feeds 2RECV_F0, which runs on rank 0.
  EXPECT_EQ(starts[1].at("name"), "1SEND_F0");
  EXPECT_EQ(starts[1].at("pid"), 1);
  EXPECT_EQ(finishes[1].at("pid"), 0);
  EXPECT_EQ(finishes[1].at("ts"), 1234569.894);
}

TEST(ChromeTrace, CounterEventsForActivationMemory) {
  const auto counters = events_with(to_chrome_trace(sample()), "C");
  ASSERT_EQ(counters.size(), 4u);
  EXPECT_EQ(counters[1], json({{"name", "activation memory"},
                               {"ph", "C"},
                               {"pid", 1},
                               {"ts", 1234568.892},
                               {"args", {{"bytes", 77}}}}));
}

TEST(ChromeTrace, FileRoundTripIsExact) {
  const Timeline tl = sample();
  const auto path = temp_file("round_trip.json");
  write_chrome_trace(tl, path);
  EXPECT_EQ(read_chrome_trace(path), tl);
  std::filesystem::remove(path);
}

TEST(ChromeTrace, RoundTripIsExactForManyTimes) {
  // Integer ns -> us double -> ns must be the identity up to ~2^50 ns (13 days).
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::int64_t> start(0, std::int64_t{1} << 50);
  std::uniform_int_distribution<std::int64_t> length(0, 1'000'000'007);
  Timeline tl;
  tl.info = TimelineInfo{"1f1b", 1000, 1000, 1, schedules::RecomputePolicy::never, {}, "cpu", "", 0, {}};
  for (int s = 0; s < 1000; ++s) tl.info.stage_to_rank.emplace_back(s);
  for (int r = 0; r < 1000; ++r) {
    const std::int64_t t = start(rng);
    tl.actions.push_back(timed(r, fmt::format("{}F0", r).c_str(), t, t + length(rng)));
    tl.memory.push_back({schedules::Rank{r}, start(rng), static_cast<std::int64_t>(rng() >> 2)});
  }
  const json text = json::parse(to_chrome_trace(tl).dump());
  EXPECT_EQ(timeline_from_chrome_trace(text, "random"), tl);
}

TEST(ChromeTrace, ReaderIgnoresKernelsAndOtherPhases) {
  json trace = to_chrome_trace(sample());
  trace["traceEvents"].push_back({{"name", "ampere_sgemm"},
                                  {"cat", "kernel"},
                                  {"ph", "X"},
                                  {"pid", 0},
                                  {"tid", 7},
                                  {"ts", 1.5},
                                  {"dur", 3.0},
                                  {"args", {{"stream", 7}, {"correlation", 42}}}});
  trace["traceEvents"].push_back(
      {{"name", "other counter"}, {"ph", "C"}, {"pid", 0}, {"ts", 2.0}, {"args", {{"value", 1}}}});
  trace["traceEvents"].push_back({{"name", "instant"}, {"ph", "i"}, {"pid", 0}, {"ts", 2.0}});
  EXPECT_EQ(timeline_from_chrome_trace(trace, "t"), sample());
}

TEST(ChromeTrace, ReaderErrorsNameOriginAndField) {
  const json good = to_chrome_trace(sample());
  const std::size_t x0 = good.at("traceEvents").size() - events_with(good, "C").size() -
                         2 * events_with(good, "s").size() - sample().actions.size();
  const std::string e0 = fmt::format("traceEvents[{}]", x0);
  struct Case {
    std::string pointer;  // JSON pointer to change
    json value;           // new value, or null to erase
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"/traceEvents", nullptr, "field 'traceEvents' is missing"},
      {"/traceEvents", 3, "field 'traceEvents' must be an array"},
      {"/otherData/gpipe", nullptr, "field 'otherData.gpipe' is missing"},
      {"/otherData/gpipe/format", "x", "field 'otherData.gpipe.format' must be \"gpipe-trace\""},
      {"/otherData/gpipe/version", 3, "field 'otherData.gpipe.version' must be 1 to 2"},
      {"/otherData/gpipe/schedule/num_ranks", "2",
       "field 'otherData.gpipe.schedule.num_ranks' must be an integer"},
      {"/otherData/gpipe/schedule/recompute", "sometimes",
       "field 'otherData.gpipe.schedule.recompute' must be never"},
      {"/otherData/gpipe/schedule/stage_to_rank", json({0, 1}),
       "field 'otherData.gpipe.schedule.stage_to_rank' must be an array of num_stages"},
      {"/otherData/gpipe/schedule/stage_to_rank/1", 2,
       "field 'otherData.gpipe.schedule.stage_to_rank[1]' must be in [0, 1]"},
      {"/otherData/gpipe/source/kind", "tpu", "field 'otherData.gpipe.source.kind' must be sim"},
      {"/otherData/gpipe/static_bytes", json({1}), "field 'otherData.gpipe.static_bytes' must"},
      {"/otherData/gpipe/batch_size", -1, "field 'otherData.gpipe.batch_size' must be in [0, "},
      {"/traceEvents/" + std::to_string(x0) + "/name", nullptr, e0 + ".name' is missing"},
      {"/traceEvents/" + std::to_string(x0) + "/ts", nullptr, e0 + ".ts' is missing"},
      {"/traceEvents/" + std::to_string(x0) + "/dur", nullptr, e0 + ".dur' is missing"},
      {"/traceEvents/" + std::to_string(x0) + "/dur", -0.001, e0 + ".dur' must not be negative"},
      {"/traceEvents/" + std::to_string(x0) + "/ts", "1", e0 + ".ts' must be a number"},
      {"/traceEvents/" + std::to_string(x0) + "/ts", 1e300, e0 + ".ts' is out of range"},
      {"/traceEvents/" + std::to_string(x0) + "/name", "0Q0", e0 + ".name' bad action '0Q0'"},
      {"/traceEvents/" + std::to_string(x0) + "/pid", 2, e0 + ".pid' must be in [0, 1]"},
      {"/traceEvents/" + std::to_string(x0) + "/tid", 2,
       e0 + ".tid' is 2 (a send lane) but 0F0 runs on the compute stream"},
      {"/traceEvents/" + std::to_string(x0) + "/tid", 0, e0 + ".tid' must be in [1, 1048576]"},
      {"/traceEvents/" + std::to_string(x0) + "/cat", "comm",
       e0 + ".cat' must be \"compute\" for 0F0"},
      {"/traceEvents/" + std::to_string(x0) + "/ph", nullptr, e0 + ".ph' must be a string"},
      {"/traceEvents/" + std::to_string(x0) + "/ts", 1234570.889,
       "actions 0F0 [1234570889, 1234570896) ns and 2F0 [1234570890, 987654321012345) ns "
       "overlap on rank 0, compute stream"},
  };
  for (const auto& c : cases) {
    json bad = good;
    const json::json_pointer ptr(c.pointer);
    if (c.value.is_null()) {
      bad.at(ptr.parent_pointer()).erase(ptr.back());
    } else {
      bad[ptr] = c.value;
    }
    const std::string message = read_error(bad);
    EXPECT_NE(message.find("pred.json: "), std::string::npos) << c.pointer << ": " << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.pointer << ": " << message;
  }
  EXPECT_NE(read_error(json::array()).find("pred.json: not a Chrome trace object"),
            std::string::npos);
}

// With tensor parallelism, each collective a compute action ran is a slice
// on its rank's tensor-parallel lane naming the action and the group; two
// that meet (the passes of an overlapped pair) take a second lane.
Timeline with_collectives() {
  Timeline tl = sample();
  tl.info.tensor_parallel = 2;
  const std::int64_t t0 = 1'234'567'891;
  tl.collectives = {{schedules::Rank{0}, schedules::parse_action("0F0"), "all-reduce", 4096, t0 + 1, t0 + 3},
                    {schedules::Rank{0}, schedules::parse_action("0F0"), "all-reduce", 4096, t0 + 2, t0 + 6},
                    {schedules::Rank{1}, schedules::parse_action("1F0"), "reduce-scatter", 1'000'000'000'001, t0 + 1'100, t0 + 1'900}};
  return tl;
}

TEST(ChromeTrace, TensorParallelCollectivesHaveALaneNamingTheirGroup) {
  const Timeline tl = with_collectives();
  const json trace = to_chrome_trace(tl);
  std::vector<json> spans;
  std::set<std::pair<int, std::string>> lanes;  // (tid, name)
  for (const auto& ev : trace.at("traceEvents")) {
    if (ev.value("cat", "") == "collective") spans.push_back(ev);
    if (ev.at("name") == "thread_name") lanes.insert({ev.at("tid").get<int>(), ev.at("args").at("name")});
  }
  ASSERT_EQ(spans.size(), 3U);
  EXPECT_EQ(spans[0].at("name"), "all-reduce");
  EXPECT_EQ(spans[0].at("tid"), tid_of_lane(kTensorParallelTid));
  EXPECT_EQ(spans[1].at("tid"), tid_of_lane(kTensorParallelTid + 1));  // it starts before the first ends
  EXPECT_EQ(spans[2].at("tid"), tid_of_lane(kTensorParallelTid));
  EXPECT_EQ(spans[0].at("args").at("within"), "0F0");
  EXPECT_EQ(spans[2].at("args").at("bytes"), 1'000'000'000'001);
  EXPECT_EQ(spans[2].at("args").at("group"), "the 2 tensor-parallel parts of rank 1");
  EXPECT_EQ(trace.at("otherData").at("gpipe").at("tensor_parallel"), 2);
  EXPECT_TRUE(lanes.contains({tid_of_lane(kTensorParallelTid), "tensor-parallel"}));
  EXPECT_TRUE(lanes.contains({tid_of_lane(kTensorParallelTid + 1), "tensor-parallel 2"}));
  EXPECT_EQ(timeline_from_chrome_trace(json::parse(trace.dump()), "tp"), tl);
}

// Context parallelism's collectives go on a lane of their own, say their
// group, and read back as the context group's.
TEST(ChromeTrace, ContextParallelCollectivesHaveALaneOfTheirOwn) {
  Timeline tl = with_collectives();
  tl.info.context_parallel = 4;
  const std::int64_t t0 = 1'234'567'891;
  tl.collectives.push_back({schedules::Rank{0}, schedules::parse_action("0F0"), "all-gather", 2048, t0 + 2, t0 + 4,
                            timelines::CollectiveGroup::context});
  const json trace = to_chrome_trace(tl);
  std::vector<json> context;
  std::set<std::pair<int, std::string>> lanes;  // (tid, name)
  for (const auto& ev : trace.at("traceEvents")) {
    if (ev.value("cat", "") == "collective" && ev.at("args").at("over") == "context-parallel") context.push_back(ev);
    if (ev.at("name") == "thread_name") lanes.insert({ev.at("tid").get<int>(), ev.at("args").at("name")});
  }
  ASSERT_EQ(context.size(), 1U);
  // It overlaps 0F0's two all-reduces in time but not their lanes.
  EXPECT_EQ(context[0].at("tid"), tid_of_lane(kContextParallelTid));
  EXPECT_EQ(context[0].at("args").at("group"), "the 4 context-parallel members of rank 0");
  EXPECT_EQ(trace.at("otherData").at("gpipe").at("context_parallel"), 4);
  EXPECT_TRUE(lanes.contains({tid_of_lane(kContextParallelTid), "context-parallel"}));
  EXPECT_EQ(timeline_from_chrome_trace(json::parse(trace.dump()), "cp"), tl);
  // A trace without "over" (older ones) reads as tensor-parallel; another word is refused.
  json old = trace;
  for (auto& ev : old.at("traceEvents")) {
    if (ev.value("cat", "") == "collective") ev.at("args").erase("over");
  }
  EXPECT_EQ(timeline_from_chrome_trace(old, "old").collectives.back().group, timelines::CollectiveGroup::tensor);
  json bad = trace;
  for (auto& ev : bad.at("traceEvents")) {
    if (ev.value("cat", "") == "collective") ev.at("args").at("over") = "pipeline";
  }
  EXPECT_THROW((void)timeline_from_chrome_trace(bad, "bad"), InputError);
}

TEST(ChromeTrace, ABadCollectiveIsAnErrorNamingItsField) {
  const json good = to_chrome_trace(with_collectives());
  std::size_t first = 0;
  while (good.at("traceEvents")[first].value("cat", "") != "collective") ++first;
  const std::string at = "/traceEvents/" + std::to_string(first);
  const std::string e = fmt::format("traceEvents[{}]", first);
  const std::vector<std::tuple<std::string, json, std::string>> cases = {
      {at + "/name", "broadcast", e + ".name' must be all-reduce, all-gather or reduce-scatter"},
      {at + "/args/within", "0SEND_F0", e + ".args.within' must be a compute action"},
      {at + "/args/within", "0Q0", e + ".args.within' bad action"},
      {at + "/args/bytes", -1, e + ".args.bytes' must be in [0, "},
      {at + "/dur", -1.0, e + ".dur' must not be negative"},
      {at + "/pid", 2, e + ".pid' must be in [0, 1]"},
      {"/otherData/gpipe/tensor_parallel", 0, "field 'otherData.gpipe.tensor_parallel' must be in [1, "},
  };
  for (const auto& [pointer, value, expected] : cases) {
    json bad = good;
    bad[json::json_pointer(pointer)] = value;
    const std::string message = read_error(bad);
    EXPECT_NE(message.find(expected), std::string::npos) << pointer << ": " << message;
  }
  // A trace written before tensor parallelism had no such field: one part.
  json old = to_chrome_trace(sample());
  old["otherData"]["gpipe"].erase("tensor_parallel");
  EXPECT_EQ(timeline_from_chrome_trace(old, "old").info.tensor_parallel, 1);
}

TEST(ChromeTrace, FileErrorsNameTheFile) {
  const auto missing = temp_file("does_not_exist.json");
  try {
    (void)read_chrome_trace(missing);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  const auto garbage = temp_file("garbage.json");
  std::ofstream(garbage) << "{\"traceEvents\": [";
  try {
    (void)read_chrome_trace(garbage);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(garbage.string() + ": not valid JSON"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(garbage);
  const auto unwritable = temp_file("no_such_dir") / "t.json";
  try {
    write_chrome_trace(sample(), unwritable);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(unwritable.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpipe::timelines
