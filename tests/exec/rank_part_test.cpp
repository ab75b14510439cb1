// RankPart (exec/dist/rank_part.hpp), what one process of a multi-process run
// measured: its JSON form round-trips exactly, a part that does not parse is
// a RunError saying so, and exchange_parts over a real TcpStore (3 threads
// as 3 processes on 127.0.0.1) gives the reporter every part in rank order
// and the others none.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "exec/dist/rank_part.hpp"
#include "exec/dist/tcp_store.hpp"
#include "schedules/action.hpp"

namespace gpipe::exec {
namespace {

using schedules::parse_action;
using std::chrono::milliseconds;

// Rank r's part: two measured steps, with SEND/RECV, STEP and a change between actions.
RankPart part_of(int r) {
  RankPart part;
  part.rank = schedules::Rank{r};
  part.static_bytes = 1'000'000'000'000 + r;  // beyond 32 bits
  const std::string s = std::to_string(r);
  for (int k = 0; k < 2; ++k) {
    RankPart::Step& step = part.steps.emplace_back();
    step.intervals = {{parse_action(s + "F0"), {100 * k, 100 * k + 40}},
                      {parse_action(s + "SEND_F0"), {100 * k + 41, 100 * k + 41}},
                      {parse_action(s + "RECV_B0"), {100 * k + 42, 100 * k + 60}},
                      {parse_action(s + "B0"), {100 * k + 61, 100 * k + 90}},
                      {parse_action(s + "STEP"), {100 * k + 91, 100 * k + 99}}};
    step.reductions = {{parse_action(s + "REDUCE_GRAD"), {100 * k + 91, 100 * k + 97}}};
    step.collectives = {{.rank = part.rank,
                         .within = parse_action(s + "F0"),
                         .collective = "all-reduce",
                         .bytes = 65536,
                         .start_ns = 100 * k + 10,
                         .end_ns = 100 * k + 18}};
    step.memory = {{0, 5, 4096}, {3, 70, 0}, {-1, 99, 0}};
  }
  return part;
}

std::string run_error_of(const std::string& text) {
  try {
    (void)parse_rank_part(text);
  } catch (const RunError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RankPart, TheJsonFormIsExact) {
  RankPart part;
  part.rank = schedules::Rank{1};
  part.static_bytes = 64;
  part.steps.push_back({{{parse_action("1F0"), {0, 10}}},
                        {{parse_action("1REDUCE_GRAD"), {12, 40}}},
                        {{.rank = part.rank,
                          .within = parse_action("1F0"),
                          .collective = "all-reduce",
                          .bytes = 4096,
                          .start_ns = 3,
                          .end_ns = 7},
                         {.rank = part.rank,
                          .within = parse_action("1F0"),
                          .collective = "all-gather",
                          .bytes = 2048,
                          .start_ns = 7,
                          .end_ns = 9,
                          .group = timelines::CollectiveGroup::context}},
                        {{0, 5, 128}}});
  EXPECT_EQ(to_json(part),
            R"({"rank":1,"static_bytes":64,"steps":[{"collectives":[["1F0","all-reduce",4096,3,7,"tensor-parallel"],)"
            R"(["1F0","all-gather",2048,7,9,"context-parallel"]],)"
            R"("intervals":[["1F0",0,10]],"memory":[[0,5,128]],"reductions":[["1REDUCE_GRAD",12,40]]}]})");
}

TEST(RankPart, RoundTripsExactly) {
  for (int r : {0, 3}) {
    const RankPart part = part_of(r);
    EXPECT_EQ(parse_rank_part(to_json(part)), part) << to_json(part);
  }
  RankPart empty;
  empty.rank = schedules::Rank{2};
  EXPECT_EQ(parse_rank_part(to_json(empty)), empty);
}

TEST(RankPart, APartThatDoesNotParseIsARunErrorSayingSo) {
  const std::string prefix = "a rank's measured part does not parse: ";
  for (const std::string& text : {std::string("{\"rank\": 1"), std::string("{\"rank\": 1}"),
                                 std::string(R"({"rank":1,"static_bytes":"many","steps":[]})")}) {
    const std::string error = run_error_of(text);
    EXPECT_EQ(error.rfind(prefix, 0), 0U) << text << ": " << error;
  }
  EXPECT_NE(run_error_of("{\"rank\": 1}").find("'static_bytes' not found"), std::string::npos);
  // An action that does not parse is named with the schedule's own message.
  std::string input_error;
  try {
    (void)parse_action("1Q0");
  } catch (const InputError& e) {
    input_error = e.what();
  }
  ASSERT_FALSE(input_error.empty());
  EXPECT_EQ(run_error_of(R"({"rank":1,"static_bytes":0,"steps":[{"intervals":[["1Q0",0,1]],"memory":[]}]})"),
            prefix + input_error);
}

// Each of `world` threads runs rank r's process: its own store (rank 0
// serves it) and exchange_parts; what each got back, or its error.
struct Exchanged {
  std::vector<std::vector<RankPart>> parts;
  std::vector<std::string> errors;
};

Exchanged exchange(int world, int reporter) {
  const milliseconds timeout(30'000);  // a hang guard: every wait ends long before
  TcpStore server("127.0.0.1", 0, /*is_server=*/true, timeout);
  Exchanged out;
  out.parts.resize(static_cast<std::size_t>(world));
  out.errors.resize(static_cast<std::size_t>(world));
  std::vector<std::thread> processes;
  for (int r = 0; r < world; ++r) {
    processes.emplace_back([&, r] {
      try {
        const RankPart mine = part_of(r);
        if (r == 0) {
          out.parts[0] = exchange_parts(server, mine, world, schedules::Rank{reporter});
        } else {
          TcpStore client("127.0.0.1", server.port(), false, timeout);
          out.parts[static_cast<std::size_t>(r)] = exchange_parts(client, mine, world, schedules::Rank{reporter});
        }
      } catch (const std::exception& e) {
        out.errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : processes) t.join();
  return out;
}

TEST(RankPart, TheReporterGetsEveryPartInRankOrderAndTheOthersNone) {
  for (const int reporter : {2, 0}) {
    SCOPED_TRACE("reporter " + std::to_string(reporter));
    const Exchanged got = exchange(3, reporter);
    EXPECT_EQ(got.errors, (std::vector<std::string>{"", "", ""}));
    for (int r = 0; r < 3; ++r) {
      const auto& parts = got.parts[static_cast<std::size_t>(r)];
      if (r == reporter) {
        EXPECT_EQ(parts, (std::vector<RankPart>{part_of(0), part_of(1), part_of(2)}));
      } else {
        EXPECT_EQ(parts, std::vector<RankPart>{}) << "rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace gpipe::exec
