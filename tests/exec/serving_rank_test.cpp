// The pieces of an inference stream that processes share
// (exec/inference/serving_rank.hpp): a rank's record survives its JSON exactly,
// and the stream assembled from the ranks' records takes each item's times
// from the stage that knows them, each RECV_F from its SEND_F's start to the
// later of the send's end and the receive's return, each input from the
// earlier of those, and each rank's peak from its changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "exec/inference/serving_rank.hpp"
#include "models/model.hpp"
#include "models/model_spec.hpp"

namespace gpipe::exec::inference {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;
using timelines::Stream;

// Two items through two stages, by hand (ns): stage 0 forwards item r over
// [10 + 100r, 50 + 100r] and sends it over [50 + 100r, 55 + 100r]; item 0
// arrives at stage 1 at 53 (before the send's end), item 1's receive returns
// at 170 (after it: the message came while stage 1 computed).
std::vector<RankRecord> two_stage_records() {
  RankRecord first;
  first.stage = 0;
  first.busy_ns = 80;
  first.arrival_ns = {0, 5};
  first.admitted_ns = {0, 90};
  for (int r = 0; r < 2; ++r) {
    first.actions.push_back({{Stage{0}, ActionKind::F, Microbatch{r}}, Rank{0}, Stream::compute, 10 + 100 * r,
                             50 + 100 * r});
    first.actions.push_back({{Stage{0}, ActionKind::SEND_F, Microbatch{r}}, Rank{0}, Stream::send, 50 + 100 * r,
                             55 + 100 * r});
    first.changes.push_back({10 + 100 * r, 64});
    first.changes.push_back({50 + 100 * r, -64});
  }
  RankRecord last;
  last.stage = 1;
  last.busy_ns = 50;
  last.received_ns = {53, 170};
  last.received_bytes = {64, 64};
  last.completed_ns = {80, 200};
  last.actions.push_back({{Stage{1}, ActionKind::F, Microbatch{0}}, Rank{1}, Stream::compute, 60, 80});
  last.actions.push_back({{Stage{1}, ActionKind::F, Microbatch{1}}, Rank{1}, Stream::compute, 170, 200});
  // Its forwards' outputs (8 B) and the inputs' frees; the inputs' arrivals come from assembly.
  last.changes = {{60, 8}, {80, -64}, {80, -8}, {170, 8}, {200, -64}, {200, -8}};
  std::vector<RankRecord> records;  // a record holds tensors: moved, not copied
  records.push_back(std::move(first));
  records.push_back(std::move(last));
  return records;
}

ServingRequest two_item_request(const models::Model& model) {
  ServingRequest rq;
  rq.model = &model;
  rq.layers_per_stage = {2, 2};
  rq.workload = {.requests = 2, .in_flight = 1};
  return rq;
}

TEST(StreamRank, ARecordSurvivesItsJsonExactly) {
  for (const RankRecord& record : two_stage_records()) {
    const RankRecord back = parse_rank_record(to_json_text(record));
    EXPECT_EQ(back.stage, record.stage);
    EXPECT_EQ(back.busy_ns, record.busy_ns);
    EXPECT_EQ(back.actions, record.actions);
    ASSERT_EQ(back.changes.size(), record.changes.size());
    for (std::size_t i = 0; i < back.changes.size(); ++i) {
      EXPECT_EQ(back.changes[i].time_ns, record.changes[i].time_ns);
      EXPECT_EQ(back.changes[i].delta, record.changes[i].delta);
    }
    EXPECT_EQ(back.arrival_ns, record.arrival_ns);
    EXPECT_EQ(back.admitted_ns, record.admitted_ns);
    EXPECT_EQ(back.received_ns, record.received_ns);
    EXPECT_EQ(back.received_bytes, record.received_bytes);
    EXPECT_EQ(back.completed_ns, record.completed_ns);
  }
}

TEST(StreamRank, AssemblyTakesEachTimeFromTheStageThatKnowsIt) {
  const models::Model model = models::parse_model("llama:layers=2,hidden=8,heads=4,kv_heads=2,ffn=12,seq=5,vocab=11");
  const ServingResult result = assemble_serving(two_item_request(model), two_stage_records(), "by hand");
  const timelines::ServingRun& run = result.run;
  ASSERT_EQ(run.items.size(), 2U);
  EXPECT_EQ(run.items[0], (timelines::ItemTimes{0, 0, 80}));
  EXPECT_EQ(run.items[1], (timelines::ItemTimes{5, 90, 200}));
  EXPECT_EQ(run.busy_ns, (std::vector<std::int64_t>{80, 50}));
  EXPECT_EQ(run.peak_bytes, (std::vector<std::int64_t>{64, 72}));
  // Each input counts from the earlier of its receive's return and its SEND's end: 53, then 155.
  std::vector<std::int64_t> rises;
  for (const auto& sample : run.timeline.memory) {
    if (sample.rank == Rank{1} && sample.activation_bytes == 64) rises.push_back(sample.time_ns);
  }
  EXPECT_EQ(rises, (std::vector<std::int64_t>{53, 155}));
  std::vector<timelines::TimedAction> recv;
  for (const auto& a : run.timeline.actions) {
    if (a.action.kind == ActionKind::RECV_F) recv.push_back(a);
  }
  ASSERT_EQ(recv.size(), 2U);
  // Item 0 arrived before its send ended: the send's end; item 1 after: its arrival.
  EXPECT_EQ(recv[0], (timelines::TimedAction{{Stage{1}, ActionKind::RECV_F, Microbatch{0}}, Rank{1}, Stream::recv, 50, 55}));
  EXPECT_EQ(recv[1], (timelines::TimedAction{{Stage{1}, ActionKind::RECV_F, Microbatch{1}}, Rank{1}, Stream::recv, 150, 170}));
  EXPECT_EQ(run.timeline.info.device, "by hand");
  ASSERT_EQ(result.static_bytes.size(), 2U);
  EXPECT_EQ(result.static_bytes[0] + result.static_bytes[1], model.params() * 4);
}

}  // namespace
}  // namespace gpipe::exec::inference
