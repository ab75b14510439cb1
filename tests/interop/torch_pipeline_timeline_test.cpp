// torch.distributed.pipelining's run as a measured Timeline
// (interop/torch_pipeline_timeline.hpp), on the traces torch wrote of the
// bench GPT (tests/data/torch/make_pipeline_traces.py): ScheduleGPipe's
// labels and the schedule runtime's, the actions gpipe predicts, in causal
// order on one clock; and edited copies: a rank missing or twice, no labels,
// no barrier, clocks apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "interop/kineto_trace.hpp"
#include "interop/torch_pipeline_timeline.hpp"
#include "schedules/action.hpp"
#include "tests/error_of.hpp"

namespace gpipe::interop {
namespace {

std::vector<KinetoTrace> pipeline_traces(const std::string& kind) {
  const auto dir = std::filesystem::path(GPIPE_TEST_DATA_DIR) / "torch";
  return {read_kineto_trace(dir / ("pipe_" + kind + "_rank0.json")),
          read_kineto_trace(dir / ("pipe_" + kind + "_rank1.json"))};
}

std::map<std::pair<int, schedules::Action>, timelines::TimedAction> by_key(const timelines::Timeline& t) {
  std::map<std::pair<int, schedules::Action>, timelines::TimedAction> out;
  for (const timelines::TimedAction& a : t.actions) out[{a.rank.value, a.action}] = a;
  return out;
}

TEST(TorchPipelineTimeline, ScheduleGPipesLabelsGiveEveryActionInCausalOrder) {
  const TorchPipelineRun run = torch_pipeline_run(pipeline_traces("gpipe"));
  const timelines::Timeline& t = run.timeline;
  EXPECT_EQ(t.info.source, "torch");
  EXPECT_EQ(t.info.num_ranks, 2);
  EXPECT_EQ(t.info.num_stages, 2);
  EXPECT_EQ(t.info.num_microbatches, 4);
  EXPECT_EQ(t.info.stage_to_rank, (std::vector<schedules::Rank>{schedules::Rank{0}, schedules::Rank{1}}));
  EXPECT_EQ(run.clock.method, "one host's clock (the traces' base times)");
  EXPECT_EQ(run.clock.error_ns, 0);
  EXPECT_LE(run.clock.barrier_exit_spread_ns, kMaxBarrierExitSpreadNs);
  EXPECT_TRUE(run.left_out.empty());
  // Rank 0: F, SEND_F, B, RECV_B of each micro-batch; rank 1: RECV_F, F, B, SEND_B.
  ASSERT_EQ(t.actions.size(), 32U);
  const auto actions = by_key(t);
  for (int m = 0; m < 4; ++m) {
    const std::string i = std::to_string(m);
    for (const auto& [rank, text] : {std::pair{0, "0F"}, {0, "0SEND_F"}, {0, "0B"}, {0, "0RECV_B"}, {1, "1RECV_F"},
                                     {1, "1F"}, {1, "1B"}, {1, "1SEND_B"}}) {
      ASSERT_TRUE(actions.contains({rank, schedules::parse_action(text + i)})) << text << i;
    }
    const timelines::TimedAction& sent = actions.at({0, schedules::parse_action("0SEND_F" + i)});
    const timelines::TimedAction& received = actions.at({1, schedules::parse_action("1RECV_F" + i)});
    const timelines::TimedAction& forward = actions.at({1, schedules::parse_action("1F" + i)});
    // The bytes arrive after the send is posted; the forward starts once they are there.
    EXPECT_LT(sent.start_ns, received.end_ns) << i;
    EXPECT_GE(forward.start_ns, received.end_ns) << i;
    EXPECT_LE(actions.at({0, schedules::parse_action("0F" + i)}).end_ns, sent.start_ns) << i;
    EXPECT_GE(actions.at({0, schedules::parse_action("0B" + i)}).start_ns, actions.at({0, schedules::parse_action("0RECV_B" + i)}).end_ns);
  }
  // Times count from rank 0's barrier exit: the step's first action is after it.
  EXPECT_GT(std::ranges::min(t.actions, {}, &timelines::TimedAction::start_ns).start_ns, 0);
}

TEST(TorchPipelineTimeline, TheRuntimesLabelsAreTheActionsOfTorchsOwnSchedule) {
  const TorchPipelineRun run = torch_pipeline_run(pipeline_traces("interleaved"));
  const timelines::Timeline& t = run.timeline;
  EXPECT_EQ(t.info.num_stages, 4);
  EXPECT_EQ(t.info.stage_to_rank, (std::vector<schedules::Rank>{schedules::Rank{0}, schedules::Rank{1}, schedules::Rank{0}, schedules::Rank{1}}));
  // Every action of torch's own schedule (its CSV, rank by rank) was measured, and no other.
  std::ifstream csv(std::filesystem::path(GPIPE_TEST_DATA_DIR) / "torch" / "pipe_interleaved.csv");
  std::set<std::pair<int, schedules::Action>> scheduled;
  std::string line;
  for (int rank = 0; std::getline(csv, line); ++rank) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // Python's csv ends rows with \r\n
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) scheduled.insert({rank, schedules::parse_action(cell)});
  }
  std::set<std::pair<int, schedules::Action>> measured;
  for (const timelines::TimedAction& a : t.actions) measured.insert({a.rank.value, a.action});
  EXPECT_EQ(measured, scheduled);
  const auto actions = by_key(t);
  for (int m = 0; m < 4; ++m) {
    for (int s = 1; s < 4; ++s) {
      const schedules::Action f{schedules::Stage{s}, schedules::ActionKind::F, schedules::Microbatch{m}};
      const schedules::Action recv{schedules::Stage{s}, schedules::ActionKind::RECV_F, schedules::Microbatch{m}};
      const int r = s % 2;
      EXPECT_GE(actions.at({r, f}).start_ns, actions.at({r, recv}).end_ns) << to_string(f);
    }
  }
}

TEST(TorchPipelineTimeline, FourStepsTakenWithoutProfStepAreReadStepByStep) {
  // make_pipeline_traces.py's interleaved run, a profiler around 4 steps and
  // no prof.step(): each recurrence of a rank's first label starts a step.
  const std::vector<KinetoTrace> traces = pipeline_traces("interleaved_steps");
  const TorchPipelineRun median = torch_pipeline_run(traces);
  EXPECT_EQ(median.steps, 4);
  ASSERT_EQ(median.step_spans_ns.size(), 4U);
  EXPECT_EQ(median.chosen, "the median");
  // The median by span: two steps shorter or equal, the lower of the two middles.
  std::vector<std::int64_t> sorted = median.step_spans_ns;
  std::ranges::sort(sorted);
  EXPECT_EQ(median.step_spans_ns[static_cast<std::size_t>(median.step - 1)], sorted[1]);
  // Every step is one run of torch's schedule: the 60 actions a rank of the one-step trace has.
  const std::size_t one_step = torch_pipeline_run(pipeline_traces("interleaved")).timeline.actions.size();
  for (int k = 1; k <= 4; ++k) {
    const TorchPipelineRun step = torch_pipeline_run(traces, {.step = k});
    EXPECT_EQ(step.step, k);
    EXPECT_EQ(step.chosen, "asked for");
    EXPECT_EQ(step.timeline.actions.size(), one_step) << "step " << k;
    std::int64_t end = 0;
    for (const auto& a : step.timeline.actions) end = std::max(end, a.end_ns);
    EXPECT_EQ(end, median.step_spans_ns[static_cast<std::size_t>(k - 1)]);
  }
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)torch_pipeline_run(traces, {.step = 5}); }),
            "--torch-step 5: the traces hold 4 steps; give 1 to 4");
  // A rank traced over fewer steps than the other: refused, not paired wrong.
  std::vector<KinetoTrace> short_rank = traces;
  std::vector<std::int64_t> starts;  // rank 1's first label, each time it recurs
  std::string first;
  for (const KinetoEvent& e : short_rank[1].events) {
    if (e.category != "user_annotation" || !e.name.starts_with("PP:")) continue;
    if (first.empty()) first = e.name;
    if (e.name == first) starts.push_back(e.start_ns);
  }
  ASSERT_EQ(starts.size(), 4U);
  std::erase_if(short_rank[1].events, [&](const KinetoEvent& e) { return e.start_ns >= starts[3]; });
  EXPECT_NE(gpipe::testing::error_of([&] { (void)torch_pipeline_run(short_rank); })
                .find(": 3 steps, where rank 0's trace has 4: trace the same steps on every rank"),
            std::string::npos);
}

std::string run_error(const std::vector<KinetoTrace>& traces) {
  return gpipe::testing::error_of([&] { (void)torch_pipeline_run(traces); });
}

TEST(TorchPipelineTimeline, ClocksApartAreAlignedAtTheBarrier) {
  const TorchPipelineRun one_clock = torch_pipeline_run(pipeline_traces("gpipe"));
  // Rank 1 on another host whose clock reads 5 s later.
  std::vector<KinetoTrace> skewed = pipeline_traces("gpipe");
  skewed[1].base_time_ns += 5'000'000'000;
  skewed[1].host_name = "other";
  const TorchPipelineRun aligned = torch_pipeline_run(skewed);
  EXPECT_EQ(aligned.clock.method, "barrier exits aligned");
  EXPECT_GT(aligned.clock.error_ns, 0);  // the shortest rank's time in the barrier
  EXPECT_EQ(aligned.clock.barrier_exit_spread_ns, 0);
  // Rank 0 stands; rank 1 moves by the exits' difference on the one clock.
  const auto before = by_key(one_clock.timeline);
  const auto after = by_key(aligned.timeline);
  std::set<std::int64_t> shifts;
  for (const auto& [key, a] : after) shifts.insert(a.start_ns - before.at(key).start_ns);
  ASSERT_EQ(shifts.size(), 2U);
  EXPECT_TRUE(shifts.contains(0));
  EXPECT_LE(std::abs(*shifts.rbegin() == 0 ? *shifts.begin() : *shifts.rbegin()), one_clock.clock.barrier_exit_spread_ns);
  // One host, but its clocks 5 s apart (an edited trace): aligned at the barrier too.
  std::vector<KinetoTrace> same_host = pipeline_traces("gpipe");
  same_host[1].base_time_ns -= 5'000'000'000;
  EXPECT_EQ(torch_pipeline_run(same_host).clock.method, "barrier exits aligned");
}

TEST(TorchPipelineTimeline, ATraceItCannotReadIsOneLineSayingWhatIsMissing) {
  std::vector<KinetoTrace> traces = pipeline_traces("gpipe");
  EXPECT_EQ(run_error({traces[0]}), "--torch-traces: rank 1's trace is missing (the run had 2 ranks)");
  EXPECT_EQ(run_error({traces[0], traces[0]}).find("rank 0 is given twice"), traces[0].origin.size() + 2);
  std::vector<KinetoTrace> no_info = traces;
  no_info[1].rank.reset();
  EXPECT_NE(run_error(no_info).find("no distributedInfo"), std::string::npos);
  std::vector<KinetoTrace> no_labels = traces;
  std::erase_if(no_labels[1].events, [](const KinetoEvent& e) { return e.category == "user_annotation" && !e.name.starts_with("gloo") && !e.name.starts_with("ProfilerStep"); });
  EXPECT_NE(run_error(no_labels).find(": no pipeline actions: torch.distributed.pipelining labels them PP:<action>"),
            std::string::npos)
      << run_error(no_labels);
  std::vector<KinetoTrace> no_barrier = traces;
  std::erase_if(no_barrier[0].events, [](const KinetoEvent& e) { return e.name == "gloo:barrier"; });
  EXPECT_NE(run_error(no_barrier).find(": no barrier before the step's first action: enter dist.barrier()"),
            std::string::npos);
  std::vector<KinetoTrace> no_spans = traces;
  std::erase_if(no_spans[0].events, [](const KinetoEvent& e) { return e.name == "gloo:send"; });
  EXPECT_NE(run_error(no_spans).find("has no gloo:send (or nccl:send) span from its post to its completion"), std::string::npos)
      << run_error(no_spans);
  EXPECT_EQ(run_error({}), "--torch-traces: no trace given");
}

}  // namespace
}  // namespace gpipe::interop
