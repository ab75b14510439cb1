// IR files: the JSON and CSV forms round-trip, read to the same schedule, and
// malformed files fail with a message naming the file and the field or cell.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "interop/schedule_file.hpp"
#include "interop/torch_csv.hpp"
#include "schedules/generate.hpp"
#include "schedules/ir_json.hpp"
#include "schedules/lower.hpp"
#include "tests/error_of.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::interop {
namespace {

using nlohmann::json;

std::vector<schedules::Schedule> sample_schedules() {
  std::vector<schedules::Schedule> all;
  for (const char* name : {"gpipe", "1f1b"}) {
    for (auto policy : {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage, schedules::RecomputePolicy::stage_except_last}) {
      for (int k : {1, 2, 4}) {
        for (int m : {1, 3, 8}) {
          schedules::ScheduleOptions o;
          o.num_ranks = k;
          o.num_microbatches = m;
          o.recompute = policy;
          all.push_back(generate(name, o));
          all.push_back(lower(all.back()));
        }
      }
    }
  }
  return all;
}

using gpipe::testing::error_of;

TEST(IrJson, MatchesTheDesignDocument) {
  schedules::ScheduleOptions o;
  o.num_ranks = 2;
  o.num_microbatches = 2;
  const json doc = to_json(schedules::generate_gpipe(o));
  EXPECT_EQ(doc, json::parse(R"({"format": "gpipe-schedule", "version": 1, "name": "gpipe",
    "num_ranks": 2, "num_stages": 2, "num_microbatches": 2, "stage_to_rank": [0, 1],
    "recompute": "never", "ranks": [["0F0", "0F1", "0B1", "0B0"], ["1F0", "1F1", "1B1", "1B0"]]})"));
  // The printed form is the same document, laid out one rank per line.
  EXPECT_EQ(json::parse(to_json_text(schedules::generate_gpipe(o))), doc);
}

TEST(IrJson, RoundTrips) {
  for (const schedules::Schedule& s : sample_schedules()) {
    EXPECT_EQ(schedules::schedule_from_json(json::parse(to_json_text(s)), "mem"), s) << s.name;
  }
}

TEST(IrCsv, RoundTripsAndAgreesWithJson) {
  for (const schedules::Schedule& s : sample_schedules()) {
    const schedules::Schedule from_csv = schedule_from_csv(to_csv(s), "mem.csv", s.name);
    const schedules::Schedule from_json = schedules::schedule_from_json(to_json(s), "mem.json");
    // The CSV carries no policy: it is inferred from the R actions, so only a
    // lowered schedule, or one that never recomputes, keeps it.
    if (s.is_lowered() || s.recompute == schedules::RecomputePolicy::never) {
      schedules::Schedule expected = s;
      // except_last reads back as the policy its R actions look like: none
      // (every backward follows its forward) or all of them.
      if (s.recompute == schedules::RecomputePolicy::stage_except_last) {
        int recomputes = 0;
        int backwards = 0;
        for (const auto& list : s.ranks) {
          for (const schedules::Action& a : list) {
            recomputes += a.kind == schedules::ActionKind::R;
            backwards += a.kind == schedules::ActionKind::B;
          }
        }
        if (recomputes == 0) expected.recompute = schedules::RecomputePolicy::never;
        if (recomputes == backwards) expected.recompute = schedules::RecomputePolicy::stage;
      }
      EXPECT_EQ(from_csv, expected) << to_csv(s);
    }
    EXPECT_EQ(from_csv.ranks, from_json.ranks);
    EXPECT_EQ(from_csv.stage_to_rank, from_json.stage_to_rank);
  }
}

TEST(IrCsv, TorchLayoutOneLinePerRank) {
  schedules::ScheduleOptions o;
  o.num_ranks = 2;
  o.num_microbatches = 2;
  EXPECT_EQ(to_csv(schedules::generate_1f1b(o)), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  // Empty cells (torch's idle slots), spaces and CRLF are accepted.
  const schedules::Schedule s = schedule_from_csv("0F0, ,0B0\r\n1F0,1B0\r\n", "x.csv", "x");
  EXPECT_EQ(s.num_ranks, 2);
  EXPECT_EQ(s.num_stages, 2);
  EXPECT_EQ(s.num_microbatches, 1);
  EXPECT_EQ(s.ranks[0].size(), 2u);
}

TEST(IrCsv, ErrorsNameLineAndCell) {
  EXPECT_EQ(error_of([] { (void)schedule_from_csv("0F0,0B0\n1F0,1X0\n", "s.csv", "s"); }),
            "s.csv: line 2 cell 2: bad action '1X0': unknown kind 'X' (expected "
            "<stage><KIND><microbatch>, e.g. 2F0, 0SEND_F3, 0STEP)");
  EXPECT_EQ(error_of([] { (void)schedule_from_csv("0F0,1F0\n1B0\n", "s.csv", "s"); }),
            "s.csv: line 2 cell 1: stage 1 also appears on line 1; a stage runs on one rank");
  EXPECT_EQ(error_of([] { (void)schedule_from_csv("0F0,0B0\n2F0,2B0\n", "s.csv", "s"); }),
            "s.csv: stage 1 has no actions (stages are numbered from 0)");
  EXPECT_EQ(error_of([] { (void)schedule_from_csv("\n", "s.csv", "s"); }),
            "s.csv: empty CSV, expected one line per rank");
}

TEST(IrJson, ErrorsNameTheField) {
  const json good = to_json(schedules::generate_gpipe(schedules::ScheduleOptions{}));
  auto with = [&](const char* key, json value) {
    json doc = good;
    doc[key] = std::move(value);
    return error_of([&] { (void)schedules::schedule_from_json(doc, "s.json"); });
  };
  EXPECT_EQ(with("format", "torch"), "s.json: format: expected \"gpipe-schedule\"");
  EXPECT_EQ(with("version", 2), "s.json: version: unsupported (this tool reads version 1)");
  EXPECT_EQ(with("num_stages", 0), "s.json: num_stages: expected an integer from 1 to 1000000");
  EXPECT_EQ(with("num_ranks", "2"), "s.json: num_ranks: expected an integer from 1 to 1000000");
  EXPECT_EQ(with("recompute", "sometimes"),
            "s.json: recompute: unknown policy 'sometimes' (never, stage, stage_except_last, full)");
  EXPECT_EQ(with("stage_to_rank", json::array({"a"})), "s.json: stage_to_rank[0]: expected an integer rank");
  EXPECT_EQ(with("ranks", json::array({json::array({"0F0", 7})})),
            "s.json: ranks[0][1]: expected an action string such as \"0F0\"");
  EXPECT_EQ(with("ranks", json::array({json::array({"0G0"})})),
            "s.json: ranks[0][0]: bad action '0G0': unknown kind 'G' (expected "
            "<stage><KIND><microbatch>, e.g. 2F0, 0SEND_F3, 0STEP)");
  json doc = good;
  doc.erase("name");
  EXPECT_EQ(error_of([&] { (void)schedules::schedule_from_json(doc, "s.json"); }), "s.json: name: missing");
  EXPECT_EQ(error_of([] { (void)schedules::schedule_from_json(json::array(), "s.json"); }),
            "s.json: expected a JSON object");
}

TEST(ScheduleFiles, CountsPastTheFilesOwnSizeAreRefusedBeforeAnyWorkIsSizedByThem) {
  // One bad cell used to make M four million, and the checker list 16 million missing actions.
  EXPECT_EQ(error_of([] { (void)schedule_from_csv("0F0,0B0\n1F3999999,1B0\n", "s.csv", "s"); }),
            "s.csv: micro-batch 3999999 in a file of 4 actions: at most 4 micro-batches fit");
  json doc = to_json(schedules::generate_gpipe(schedules::ScheduleOptions{}));  // 1 rank, 1 micro-batch: 2 actions
  doc["num_microbatches"] = 1000000;
  EXPECT_EQ(error_of([&] { (void)schedules::schedule_from_json(doc, "s.json"); }),
            "s.json: num_microbatches: 1000000 micro-batches in a file of 2 actions: every micro-batch needs at "
            "least one");
  doc["num_microbatches"] = 1;
  doc["num_stages"] = 3;
  EXPECT_EQ(error_of([&] { (void)schedules::schedule_from_json(doc, "s.json"); }),
            "s.json: num_stages: 3 stages in a file of 2 actions: every stage needs at least one");
}

TEST(ScheduleFiles, AnInputWithNoEndStopsAtTheCap) {
  EXPECT_EQ(error_of([] { (void)read_text_file("/dev/zero"); }),
            "/dev/zero: larger than the 256 MiB an input file may be");
}

TEST(ScheduleFiles, ReadsEitherFormByContent) {
  const auto dir = std::filesystem::temp_directory_path() / "gpipe_ir_files_test";
  std::filesystem::create_directories(dir);
  schedules::ScheduleOptions o;
  o.num_ranks = 3;
  o.num_microbatches = 5;
  const schedules::Schedule s = lower(schedules::generate_1f1b(o));
  write_text_file(dir / "s.json", to_json_text(s));
  write_text_file(dir / "1f1b.csv", to_csv(s));
  EXPECT_EQ(read_schedule_file(dir / "s.json"), s);
  EXPECT_EQ(read_schedule_file(dir / "1f1b.csv"), s);
  write_text_file(dir / "bad.json", "{\"format\": ");
  const std::string bad = error_of([&] { (void)read_schedule_file(dir / "bad.json"); });
  EXPECT_EQ(bad.rfind((dir / "bad.json").string() + ": not valid JSON: ", 0), 0u) << bad;
  const std::string missing = error_of([&] { (void)read_schedule_file(dir / "none.json"); });
  EXPECT_EQ(missing, (dir / "none.json").string() + ": cannot read: No such file or directory");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpipe::interop
