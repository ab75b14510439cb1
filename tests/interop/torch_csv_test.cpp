// PyTorch 2.15's whole schedule CSV grammar: every kind torch writes, empty
// cells, composites `(a;b)OVERLAP_F_B`, exact errors for bad cells, round
// trips through CSV and JSON, and files torch itself wrote
// (tests/data/torch_csv/, made by make_torch_csv.py there) read, validate and
// write back byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "base/files.hpp"
#include "interop/schedule_file.hpp"
#include "interop/torch_csv.hpp"
#include "schedules/ir_json.hpp"
#include "schedules/overlap.hpp"
#include "schedules/validate.hpp"
#include "tests/error_of.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::interop {
namespace {

using gpipe::testing::error_of;
using schedules::testing::program;

const std::string kData = std::string(GPIPE_TEST_DATA_DIR) + "/torch_csv/";

std::string without_cr(std::string text) {
  std::erase(text, '\r');
  return text;
}

// Two ranks, M = 1, lowered as torch lowers: every kind of the grammar but the
// composite, BW for the full backward, an empty cell, CRLF line ends.
constexpr const char* kEveryKind =
    "0UNSHARD,0F0,0SEND_F0,,0RECV_B0,0BW0,0WAIT_SEND_F0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\r\n"
    "1UNSHARD,1RECV_F0,1F0,1I0,1SEND_B0,1W0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1RESHARD,1WAIT_SEND_B0\r\n";

TEST(TorchCsv, ReadsEveryKind) {
  const schedules::Schedule s = schedule_from_csv(kEveryKind, "every.csv", "every");
  EXPECT_EQ(s.num_ranks, 2);
  EXPECT_EQ(s.num_stages, 2);
  EXPECT_EQ(s.num_microbatches, 1);
  EXPECT_EQ(s.recompute, schedules::RecomputePolicy::never);
  EXPECT_EQ(program(s, 0),
            "0UNSHARD 0F0 0SEND_F0 0RECV_B0 0B0 0WAIT_SEND_F0 0REDUCE_GRAD 0WAIT_REDUCE_GRAD 0RESHARD");
  EXPECT_EQ(program(s, 1),
            "1UNSHARD 1RECV_F0 1F0 1I0 1SEND_B0 1W0 1REDUCE_GRAD 1WAIT_REDUCE_GRAD 1RESHARD 1WAIT_SEND_B0");
  EXPECT_TRUE(s.is_lowered());
  EXPECT_TRUE(s.overlapped.empty());
  const auto errors = find_errors(s);
  EXPECT_TRUE(errors.empty()) << errors.front().message;
}

// One rank holds stages 0 and 1 (a V): the forward of micro-batch 1 overlaps
// the backward of micro-batch 0.
constexpr const char* kComposite = "0F0,1F0,(0F1;1B0)OVERLAP_F_B,1F1,1B1,0B0,0B1\n";

TEST(TorchCsv, ReadsAComposite) {
  const schedules::Schedule s = schedule_from_csv(kComposite, "v.csv", "v");
  EXPECT_EQ(program(s, 0), "0F0 1F0 0F1 1B0 1F1 1B1 0B0 0B1");
  ASSERT_EQ(s.overlapped.size(), 1u);
  EXPECT_EQ(s.overlapped[0], (schedules::OverlapPair{schedules::parse_action("0F1"), schedules::parse_action("1B0")}));
  EXPECT_EQ(s.num_stages, 2);
  EXPECT_EQ(s.num_microbatches, 2);
  EXPECT_TRUE(find_errors(s).empty());
  // Written back as torch writes it.
  EXPECT_EQ(to_csv(s), kComposite);
  EXPECT_EQ(to_json(s)["ranks"][0][2], "(0F1;1B0)OVERLAP_F_B");
}

TEST(TorchCsv, CompositeWithSpacesAndAnInputBackward) {
  const schedules::Schedule s = schedule_from_csv("0F0,1F0,1I0,( 0F1 ; 1I1 )OVERLAP_F_B,1W0,1W1,0B0,0B1\n", "v.csv", "v");
  ASSERT_EQ(s.overlapped.size(), 1u);
  EXPECT_EQ(to_string(s.overlapped[0]), "(0F1;1I1)OVERLAP_F_B");
}

TEST(TorchCsv, RoundTripsNewKindsAndOverlapsThroughCsvAndJson) {
  for (const char* text : {kEveryKind, kComposite}) {
    const schedules::Schedule s = schedule_from_csv(text, "s.csv", "s");
    EXPECT_EQ(schedule_from_csv(to_csv(s), "again.csv", "s"), s);
    EXPECT_EQ(schedules::schedule_from_json(nlohmann::json::parse(to_json_text(s)), "s.json"), s);
  }
  EXPECT_EQ(to_csv(schedule_from_csv(kComposite, "v.csv", "v")), kComposite);
  // Written back without the idle cell, and with B for BW.
  EXPECT_EQ(to_csv(schedule_from_csv(kEveryKind, "s.csv", "s")).substr(0, 44),
            "0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_SEN");
}

std::string csv_error(const char* text) {
  return error_of([&] { (void)schedule_from_csv(text, "s.csv", "s"); });
}

TEST(TorchCsv, BadCellsNameFileLineAndCell) {
  const std::string expected = " (expected <stage><KIND><microbatch>, e.g. 2F0, 0SEND_F3, 0STEP)";
  EXPECT_EQ(csv_error("0F0,0SEND_X0\n"), "s.csv: line 1 cell 2: bad action '0SEND_X0': unknown kind 'SEND_X'" + expected);
  EXPECT_EQ(csv_error("0F0\n-1F0\n"), "s.csv: line 2 cell 1: bad action '-1F0': the stage is negative" + expected);
  EXPECT_EQ(csv_error("0F0,,0B-1\n"), "s.csv: line 1 cell 3: bad action '0B-1': the micro-batch is negative" + expected);
  EXPECT_EQ(csv_error("0UNSHARD0,0F0,0B0\n"),
            "s.csv: line 1 cell 1: bad action '0UNSHARD0': UNSHARD takes no micro-batch" + expected);
  EXPECT_EQ(csv_error("0F0,0B0,0WAIT_SEND_B\n"),
            "s.csv: line 1 cell 3: bad action '0WAIT_SEND_B': no micro-batch number" + expected);
  EXPECT_EQ(csv_error("0F0,1F0\n1B0,0B0\n"),
            "s.csv: line 2 cell 1: stage 1 also appears on line 1; a stage runs on one rank");
  EXPECT_EQ(csv_error("1000000F0\n"), "s.csv: line 1 cell 1: stage 1000000 is beyond the 1000000 stages this tool reads");
  // A composite whose two stages sit on two lines.
  EXPECT_EQ(csv_error("0F0,1F0\n2F0,(2F1;0B0)OVERLAP_F_B\n"),
            "s.csv: line 2 cell 2: stage 0 also appears on line 1; a stage runs on one rank");
}

TEST(TorchCsv, MalformedCompositesNameTheCell) {
  EXPECT_EQ(csv_error("0F0,(0F1;1B0\n"), "s.csv: line 1 cell 2: bad composite '(0F1;1B0': no closing ')'");
  EXPECT_EQ(csv_error("(0F1;1B0)OVERLAP\n"),
            "s.csv: line 1 cell 1: bad composite '(0F1;1B0)OVERLAP': unknown composite kind 'OVERLAP' "
            "(torch's is OVERLAP_F_B)");
  EXPECT_EQ(csv_error("(0F1;1B0;1F2)OVERLAP_F_B\n"),
            "s.csv: line 1 cell 1: bad composite '(0F1;1B0;1F2)OVERLAP_F_B': holds 3 actions; "
            "OVERLAP_F_B holds one forward and one backward");
  EXPECT_EQ(csv_error("(0F1)OVERLAP_F_B\n"),
            "s.csv: line 1 cell 1: bad composite '(0F1)OVERLAP_F_B': holds 1 actions; "
            "OVERLAP_F_B holds one forward and one backward");
  EXPECT_EQ(csv_error("(0F1;1F0)OVERLAP_F_B\n"),
            "s.csv: line 1 cell 1: bad composite '(0F1;1F0)OVERLAP_F_B': expected a forward then a backward "
            "(B or I), e.g. (0F3;3B1)OVERLAP_F_B");
  EXPECT_EQ(csv_error("(1B0;0F1)OVERLAP_F_B\n"),
            "s.csv: line 1 cell 1: bad composite '(1B0;0F1)OVERLAP_F_B': expected a forward then a backward "
            "(B or I), e.g. (0F3;3B1)OVERLAP_F_B");
  EXPECT_EQ(csv_error("(0F1;1W0)OVERLAP_F_B\n"),
            "s.csv: line 1 cell 1: bad composite '(0F1;1W0)OVERLAP_F_B': expected a forward then a backward "
            "(B or I), e.g. (0F3;3B1)OVERLAP_F_B");
  EXPECT_EQ(csv_error("(0F1;1Q0)OVERLAP_F_B\n"),
            "s.csv: line 1 cell 1: bad composite '(0F1;1Q0)OVERLAP_F_B': bad action '1Q0': unknown kind 'Q' "
            "(expected <stage><KIND><microbatch>, e.g. 2F0, 0SEND_F3, 0STEP)");
}

TEST(TorchJson, CompositesAndTheirErrors) {
  nlohmann::json doc = to_json(schedule_from_csv(kComposite, "v.csv", "v"));
  EXPECT_EQ(schedules::schedule_from_json(doc, "v.json").overlapped.size(), 1u);
  doc["ranks"][0][2] = "(0F1;1B0)OVERLAP_B_F";
  EXPECT_EQ(error_of([&] { (void)schedules::schedule_from_json(doc, "v.json"); }),
            "v.json: ranks[0][2]: bad composite '(0F1;1B0)OVERLAP_B_F': unknown composite kind 'OVERLAP_B_F' "
            "(torch's is OVERLAP_F_B)");
}

struct TorchFile {
  const char* name;
  int ranks, stages, microbatches;
  std::vector<int> stage_to_rank;
  std::size_t overlapped;
};

TEST(TorchCsv, TorchsOwnFilesReadValidateAndWriteBackByteForByte) {
  const TorchFile files[] = {
      {"dualpipev_k2_m4.csv", 2, 4, 4, {0, 1, 1, 0}, 6},
      {"dualpipev_k2_m4_comms.csv", 2, 4, 4, {0, 1, 1, 0}, 6},
      {"interleaved_zb_k2_m4_v2_comms.csv", 2, 4, 4, {0, 1, 0, 1}, 0},
      {"1f1b_k4_m8_comms.csv", 4, 4, 8, {0, 1, 2, 3}, 0},
  };
  for (const TorchFile& f : files) {
    const std::string path = kData + f.name;
    const schedules::Schedule s = read_schedule_file(path);
    EXPECT_EQ(s.num_ranks, f.ranks) << f.name;
    EXPECT_EQ(s.num_stages, f.stages) << f.name;
    EXPECT_EQ(s.num_microbatches, f.microbatches) << f.name;
    std::vector<int> map;
    for (schedules::Rank r : s.stage_to_rank) map.push_back(r.value);
    EXPECT_EQ(map, f.stage_to_rank) << f.name;
    EXPECT_EQ(s.overlapped.size(), f.overlapped) << f.name;
    const auto errors = find_errors(s);
    EXPECT_TRUE(errors.empty()) << f.name << ": " << errors.front().message;
    EXPECT_EQ(to_csv(s), without_cr(read_text_file(path))) << f.name;
  }
}

}  // namespace
}  // namespace gpipe::interop
