// The worker of exec/runtime/worker.hpp on its own, with fakes on both sides
// (tests/exec/fake_backend.hpp): scripted stages and device below it, a
// scripted link, a recording timer and real RunControl, StepBarrier and
// MemoryLog beside it, one real thread per rank. What it must do: call its
// stages and its link exactly in its program's order, hand each stage the data
// its producer made, publish the loss the loss stage's outputs sum to over N,
// time only the measured steps, leave quietly on an abort, and report every
// failure as one line naming the rank and the action (or the step).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "schedules/action.hpp"
#include "tests/exec/fake_backend.hpp"
#include "tests/exec/hand_schedules.hpp"

namespace gpipe::exec {
namespace {

using fake::Call;
using fake::WorkerHarness;
using schedules::Action;
using schedules::ActionKind;
using schedules::parse_action;
using schedules::RecomputePolicy;
using Strings = std::vector<std::string>;

// gpipe, K = 2, M = 2, N = 8 (micro-batches of 4).
TrainOptions two_by_two(RecomputePolicy recompute = RecomputePolicy::never) {
  return fake::options("gpipe", 2, 2, 8, recompute);
}

TEST(Worker, CallsItsStagesAndLinkInProgramOrderAndHandsTheDataOn) {
  WorkerHarness h(two_by_two());
  h.run();
  EXPECT_EQ(h.error(), "no error");
  EXPECT_EQ(h.log().texts(schedules::Rank{0}),
            (Strings{"0F0(x0@0)", "0SEND_F0(0F0@0 to 1)", "0F1(x1@0)", "0SEND_F1(0F1@0 to 1)",
                     "0RECV_B1(1B1@0 from 1)", "0B1(1B1@0)", "0RECV_B0(1B0@0 from 1)", "0B0(1B0@0)",
                     "0STEP"}));
  EXPECT_EQ(h.log().texts(schedules::Rank{1}),
            (Strings{"1RECV_F0(0F0@0 from 0)", "1F0(0F0@0, y0@0)", "1RECV_F1(0F1@0 from 0)",
                     "1F1(0F1@0, y1@0)", "1B1(dl[4]@0)", "1SEND_B1(1B1@0 to 0)", "1B0(dl[4]@0)",
                     "1SEND_B0(1B0@0 to 0)", "1STEP"}));
  // The step's data is uploaded before the step, the loss read after it.
  EXPECT_EQ(h.device(0).events(), (Strings{"enter_thread", "upload x0@0", "upload x1@0", "data_ready",
                                           "finish_step", "drain"}));
  EXPECT_EQ(h.device(1).events(),
            (Strings{"enter_thread", "upload y0@0", "upload dl[4]@0", "upload y1@0", "upload dl[4]@0",
                     "data_ready", "finish_step", "sum 1F0@0", "sum 1F1@0", "drain"}));
  // (1F0 + 1F1) / N = (10 + 11) / 8.
  EXPECT_EQ(h.control().losses(), std::vector<double>{21.0 / 8});
  EXPECT_EQ(h.describe_ranks(), "rank 0 has finished, rank 1 has finished");
  EXPECT_EQ(h.link().pending(), 0U);
  EXPECT_EQ(h.link().finish_aborts(), 0);
}

TEST(Worker, DropsTheStashAfterARecomputedForwardAndRebuildsItBeforeTheBackward) {
  WorkerHarness h(two_by_two(RecomputePolicy::stage));
  h.run();
  EXPECT_EQ(h.error(), "no error");
  EXPECT_EQ(h.log().texts(schedules::Rank{0}),
            (Strings{"0F0(x0@0)", "0DROP0", "0SEND_F0(0F0@0 to 1)", "0F1(x1@0)", "0DROP1",
                     "0SEND_F1(0F1@0 to 1)", "0R1", "0RECV_B1(1B1@0 from 1)", "0B1(1B1@0)", "0R0",
                     "0RECV_B0(1B0@0 from 1)", "0B0(1B0@0)", "0STEP"}));
  EXPECT_EQ(h.log().texts(schedules::Rank{1}),
            (Strings{"1RECV_F0(0F0@0 from 0)", "1F0(0F0@0, y0@0)", "1DROP0", "1RECV_F1(0F1@0 from 0)",
                     "1F1(0F1@0, y1@0)", "1DROP1", "1R1(y1@0)", "1B1(dl[4]@0)", "1SEND_B1(1B1@0 to 0)",
                     "1R0(y0@0)", "1B0(dl[4]@0)", "1SEND_B0(1B0@0 to 0)", "1STEP"}));
}

TEST(Worker, OnlyTheRanksOfTheFirstAndTheLossStageUploadData) {
  WorkerHarness h(fake::options("gpipe", 3, 1, 2));
  h.run();
  EXPECT_EQ(h.error(), "no error");
  EXPECT_EQ(h.device(0).events(), (Strings{"enter_thread", "upload x0@0", "data_ready", "finish_step", "drain"}));
  EXPECT_EQ(h.device(1).events(), (Strings{"enter_thread", "finish_step", "drain"}));
  EXPECT_EQ(h.device(2).events(), (Strings{"enter_thread", "upload y0@0", "upload dl[2]@0", "data_ready",
                                           "finish_step", "sum 2F0@0", "drain"}));
  EXPECT_EQ(h.log().texts(schedules::Rank{1}),
            (Strings{"1RECV_F0(0F0@0 from 0)", "1F0(0F0@0)", "1SEND_F0(1F0@0 to 2)", "1RECV_B0(2B0@0 from 2)",
                     "1B0(2B0@0)", "1SEND_B0(1B0@0 to 0)", "1STEP"}));
}

TEST(Worker, PublishesEachStepsLossAsTheLossStagesOutputsSummedOverN) {
  TrainOptions o = fake::options("1f1b", 2, 4, 8);
  o.steps = 3;
  o.measured_steps = 1;
  WorkerHarness h(std::move(o));
  h.run();
  EXPECT_EQ(h.error(), "no error");
  // Step t: sum over m of (1000 t + 10 + m), over N = 8.
  EXPECT_EQ(h.control().losses(), (std::vector<double>{46.0 / 8, 4046.0 / 8, 8046.0 / 8}));
}

// A compute-only schedule written out: `programs` per rank.
schedules::Schedule hand_written(std::string name, std::vector<int> stage_to_rank, int microbatches,
                                 const std::vector<Strings>& programs) {
  schedules::Schedule s;
  s.name = std::move(name);
  s.num_ranks = static_cast<int>(programs.size());
  s.num_stages = static_cast<int>(stage_to_rank.size());
  s.num_microbatches = microbatches;
  for (int r : stage_to_rank) s.stage_to_rank.push_back(schedules::Rank{r});
  for (const Strings& program : programs) {
    auto& list = s.ranks.emplace_back();
    for (const std::string& a : program) list.push_back(parse_action(a));
  }
  return s;
}

std::string tag_text(const Call& call) { return call.tag ? to_string(*call.tag) : "no tag"; }

// What every call of a run must be, from the lowered program alone: the
// calls in program order, each step in turn (a recomputed F followed by its
// DROP); each F, B and R with its producer's output; each SEND and RECV with
// its tag, peer and mark.
void expect_program_order_and_data_flow(WorkerHarness& h, const std::string& what) {
  SCOPED_TRACE(what);
  const schedules::Schedule& s = h.lowered();
  const RunSettings& settings = h.settings();
  const int last = s.num_stages - 1;
  // What made stage st's input gradient: its I where the backward is split, else its B.
  const auto grad = [&](int st, int m, int t) {
    bool split = false;
    for (const auto& list : s.ranks) split = split || std::ranges::count(list, Action{schedules::Stage{st}, ActionKind::I, schedules::Microbatch{m}}) > 0;
    return fmt::format("{}{}{}@{}", st, split ? "I" : "B", m, t);
  };
  ASSERT_EQ(h.error(), "no error");
  for (int r = 0; r < s.num_ranks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& program = h.program(r);
    struct Expected {
      Action action;
      int step;
      int index;
    };
    std::vector<Expected> expected;
    Strings expected_actions;
    for (int t = 0; t < settings.steps; ++t) {
      for (std::size_t i = 0; i < program.size(); ++i) {
        const Action& a = program[i];
        expected.push_back({a, t, static_cast<int>(i)});
        expected_actions.push_back(to_string(a));
        if (a.kind == ActionKind::F && settings.recomputed[a.stage.at()][a.microbatch.at()]) {
          expected.push_back({a, t, -1});  // its DROP
          expected_actions.push_back(fmt::format("{}DROP{}", a.stage.value, a.microbatch.value));
        }
      }
    }
    const std::vector<Call> calls = h.log().calls(schedules::Rank{r});
    ASSERT_EQ(h.log().actions(schedules::Rank{r}), expected_actions);
    for (std::size_t c = 0; c < calls.size(); ++c) {
      const Call& call = calls[c];
      const Action& a = expected[c].action;
      const int t = expected[c].step;
      const int s_ = a.stage.value;
      const int m = a.microbatch.value;
      SCOPED_TRACE(call.text() + " of step " + std::to_string(t));
      const std::string target = s_ == last ? fmt::format("y{}@{}", m, t) : "";
      const int slot = t >= settings.first_measured_step() ? t - settings.first_measured_step() : -1;
      if (expected[c].index < 0) continue;  // a DROP: no data
      switch (a.kind) {
        case ActionKind::F:
          EXPECT_EQ(call.input, s_ == 0 ? fmt::format("x{}@{}", m, t) : fmt::format("{}F{}@{}", s_ - 1, m, t));
          EXPECT_EQ(call.target, target);
          break;
        case ActionKind::R:
          EXPECT_EQ(call.target, target);
          break;
        case ActionKind::B:
        case ActionKind::I:
          EXPECT_EQ(call.input, s_ == last
                                    ? fmt::format("dl[{}]@{}", settings.microbatch_sizes.at(a.microbatch.at()), t)
                                    : grad(s_ + 1, m, t));
          break;
        case ActionKind::W:
          EXPECT_EQ(call.input, "");  // W reads only what its own I left
          break;
        case ActionKind::SEND_F:
        case ActionKind::SEND_B: {
          const bool f = a.kind == ActionKind::SEND_F;
          EXPECT_EQ(call.input, f ? fmt::format("{}F{}@{}", s_, m, t) : grad(s_, m, t));
          EXPECT_EQ(call.peer, s.rank_of(schedules::Stage{f ? s_ + 1 : s_ - 1}).value);
          EXPECT_EQ(tag_text(call), to_string(MessageTag{t, f ? MessageKind::activation : MessageKind::gradient,
                                                         a.stage, a.microbatch}));
          EXPECT_EQ(call.index, expected[c].index);
          EXPECT_EQ(call.slot, slot);
          break;
        }
        case ActionKind::RECV_F:
        case ActionKind::RECV_B: {
          const bool f = a.kind == ActionKind::RECV_F;
          const schedules::Stage producer{f ? s_ - 1 : s_ + 1};
          EXPECT_EQ(call.input, f ? fmt::format("{}F{}@{}", producer.value, m, t) : grad(producer.value, m, t));
          EXPECT_EQ(call.peer, s.rank_of(producer).value);
          EXPECT_EQ(tag_text(call), to_string(MessageTag{t, f ? MessageKind::activation : MessageKind::gradient,
                                                         producer, a.microbatch}));
          EXPECT_EQ(call.index, expected[c].index);
          EXPECT_EQ(call.slot, slot);
          break;
        }
        default:
          break;
      }
    }
  }
  std::vector<double> losses;
  for (int t = 0; t < settings.steps; ++t) {
    double sum = 0;
    for (int m = 0; m < s.num_microbatches; ++m) sum += 1000.0 * t + 10.0 * last + m;
    losses.push_back(sum / static_cast<double>(settings.batch));
  }
  EXPECT_EQ(h.control().losses(), losses);
  EXPECT_EQ(h.link().pending(), 0U);
}

TEST(Worker, EveryScheduleRunsInProgramOrderWithEachInputFromItsProducer) {
  for (const std::string name : {"gpipe", "1f1b"}) {
    for (const int k : {1, 3, 4}) {
      for (const int m : {1, 3, 5}) {
        for (const RecomputePolicy recompute :
             {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
          TrainOptions o = fake::options(name, k, m, 2 * m + 1, recompute);  // uneven micro-batches
          o.steps = 3;
          o.measured_steps = 2;
          WorkerHarness h(std::move(o));
          h.run();
          expect_program_order_and_data_flow(
              h, fmt::format("{} K={} M={} recompute {}", name, k, m, static_cast<int>(recompute)));
        }
      }
    }
  }
}

TEST(Worker, StagesOnOneRankHandTheirDataOverWithoutTheLink) {
  // Two stages on one rank, then four stages looped over two ranks (stage s on rank s mod 2).
  for (const RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::stage}) {
    TrainOptions o = fake::options("gpipe", 1, 1, 4);
    o.schedule = hand_written("two-on-one", {0, 0}, 2, {{"0F0", "1F0", "0F1", "1F1", "1B1", "0B1", "1B0", "0B0"}});
    o.schedule.recompute = recompute;
    o.steps = 2;
    WorkerHarness one(o);
    one.run();
    expect_program_order_and_data_flow(one, "two stages on one rank");
    EXPECT_EQ(one.link().pending(), 0U);

    o.schedule = hand_written("looped", {0, 1, 0, 1}, 2,
                              {{"0F0", "0F1", "2F0", "2F1", "2B1", "2B0", "0B1", "0B0"},
                               {"1F0", "1F1", "3F0", "3B0", "3F1", "3B1", "1B1", "1B0"}});
    o.schedule.recompute = recompute;
    WorkerHarness looped(o);
    looped.run();
    expect_program_order_and_data_flow(looped, "four stages looped over two ranks");
  }
}

TEST(Worker, ASplitBackwardsIHandsOnTheGradientAndItsWFollowsItOnItsStage) {
  using hand_schedules::WeightPlacement;
  for (const WeightPlacement where : {WeightPlacement::right_after_input, WeightPlacement::after_next_action,
                                      WeightPlacement::at_the_end}) {
    for (const RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::stage_except_last}) {
      for (const std::string name : {"gpipe", "1f1b"}) {
        TrainOptions o = fake::options(name, 3, 4, 9, recompute);
        o.schedule = hand_schedules::split_backward(o.schedule, where);
        o.steps = 2;
        WorkerHarness h(std::move(o));
        h.run();
        expect_program_order_and_data_flow(h, fmt::format("{} split, placement {}, recompute {}", name,
                                                          static_cast<int>(where), static_cast<int>(recompute)));
      }
      // Two stages per rank, looped and V-shaped.
      for (schedules::Schedule order : {hand_schedules::looped_bfs(2, 3), hand_schedules::v_shape(2, 3)}) {
        TrainOptions o = fake::options("gpipe", 4, 3, 6);
        order.recompute = recompute;
        o.schedule = hand_schedules::split_backward(order, where);
        o.steps = 2;
        WorkerHarness h(std::move(o));
        h.run();
        expect_program_order_and_data_flow(h, fmt::format("{} split, placement {}, recompute {}", order.name,
                                                          static_cast<int>(where), static_cast<int>(recompute)));
      }
    }
  }
}

TEST(Worker, OnlyTheLastMeasuredStepsAreTimed) {
  TrainOptions o = fake::options("gpipe", 2, 1, 2, RecomputePolicy::stage);
  o.steps = 3;
  o.measured_steps = 2;
  WorkerHarness h(std::move(o));
  h.run();
  ASSERT_EQ(h.error(), "no error");
  // Rank 0 runs 0F0 0SEND_F0 0R0 0RECV_B0 0B0 0STEP; rank 1 1RECV_F0 1F0 1R0 1B0 1SEND_B0 1STEP.
  // Steps 1 and 2 are measured slots 0 and 1; only compute actions are bracketed.
  Strings rank0;
  Strings rank1;
  for (const int slot : {0, 1}) {
    const std::string n = std::to_string(slot);
    for (const std::string& e : {"start " + n, "begin " + n + " #0 0F0", "end " + n + " #0 0F0",
                                "begin " + n + " #2 0R0", "end " + n + " #2 0R0", "begin " + n + " #4 0B0",
                                "end " + n + " #4 0B0", "begin " + n + " #5 0STEP", "end " + n + " #5 0STEP"}) {
      rank0.push_back(e);
    }
    for (const std::string& e : {"start " + n, "begin " + n + " #1 1F0", "end " + n + " #1 1F0",
                                "begin " + n + " #2 1R0", "end " + n + " #2 1R0", "begin " + n + " #3 1B0",
                                "end " + n + " #3 1B0", "begin " + n + " #5 1STEP", "end " + n + " #5 1STEP"}) {
      rank1.push_back(e);
    }
  }
  EXPECT_EQ(h.timer().events(schedules::Rank{0}), rank0);
  EXPECT_EQ(h.timer().events(schedules::Rank{1}), rank1);
  // Every rank of a step starts at the barrier's one moment.
  const auto starts = h.timer().starts();
  ASSERT_EQ(starts.size(), 4U);
  EXPECT_EQ(starts.at({0, 0}), starts.at({1, 0}));
  EXPECT_EQ(starts.at({0, 1}), starts.at({1, 1}));
  EXPECT_LE(starts.at({0, 0}), starts.at({0, 1}));
  // The link is told which slot a SEND or RECV belongs to: none in step 0.
  std::vector<int> slots;
  for (const Call& call : h.log().calls(schedules::Rank{1})) {
    if (call.tag) slots.push_back(call.slot);
  }
  EXPECT_EQ(slots, (std::vector<int>{-1, -1, 0, 0, 1, 1}));
}

TEST(Worker, AnAbortWakesAWorkerBlockedInAReceiveAndItLeavesWithoutAnErrorOfItsOwn) {
  WorkerHarness h(two_by_two());
  h.link().hold("1RECV_F0");
  h.start();
  ASSERT_TRUE(h.link().wait_until_receiving("1RECV_F0"));
  ASSERT_TRUE(h.link().wait_until_receiving("0RECV_B1"));
  EXPECT_EQ(h.describe_ranks(), "rank 0 waits in 0RECV_B1, rank 1 waits in 1RECV_F0");
  EXPECT_EQ(h.error(), "no error");
  h.control().fail("stopped by the test");
  h.join();
  EXPECT_EQ(h.error(), "stopped by the test");
  EXPECT_EQ(h.describe_ranks(), "rank 0 has stopped, rank 1 has stopped");
  EXPECT_TRUE(h.control().all_exited());
  EXPECT_EQ(h.control().losses(), std::vector<double>{});
  EXPECT_EQ(h.link().aborts(), 1);
  EXPECT_EQ(h.link().finish_aborts(), 2);  // each rank, on its way out
  EXPECT_EQ(h.log().texts(schedules::Rank{0}),
            (Strings{"0F0(x0@0)", "0SEND_F0(0F0@0 to 1)", "0F1(x1@0)", "0SEND_F1(0F1@0 to 1)"}));
  EXPECT_EQ(h.log().texts(schedules::Rank{1}), Strings{});
  EXPECT_EQ(h.device(0).events().back(), "drain");
  EXPECT_EQ(h.device(1).events(), (Strings{"enter_thread", "upload y0@0", "upload dl[4]@0", "upload y1@0",
                                           "upload dl[4]@0", "data_ready", "drain"}));
}

TEST(Worker, AnInjectedStallBlocksUntilTheAbortAndIsNamedInTheRanksPositions) {
  TrainOptions o = two_by_two();
  o.fault = FaultInjection{schedules::Rank{1}, parse_action("1F1"), FaultInjection::Kind::stall};
  WorkerHarness h(std::move(o));
  h.start();
  ASSERT_TRUE(h.link().wait_until_receiving("0RECV_B1"));
  ASSERT_TRUE(WorkerHarness::eventually(
      [&] { return h.describe_ranks().find("(injected stall)") != std::string::npos; }));
  EXPECT_EQ(h.describe_ranks(), "rank 0 waits in 0RECV_B1, rank 1 in 1F1 (injected stall)");
  EXPECT_EQ(h.error(), "no error");  // a stall fails nothing: only the watchdog ends it
  h.control().fail("stalled (the test's watchdog)");
  h.join();
  EXPECT_EQ(h.error(), "stalled (the test's watchdog)");
  EXPECT_EQ(h.describe_ranks(), "rank 0 has stopped, rank 1 has stopped");
  EXPECT_EQ(h.log().actions(schedules::Rank{1}), (Strings{"1RECV_F0", "1F0", "1RECV_F1"}));
}

TEST(Worker, AnInjectedStallAtTheEndLeavesTheOtherRankAtTheNextStepsBarrier) {
  TrainOptions o = fake::options("gpipe", 2, 1, 2);
  o.steps = 2;
  o.fault = FaultInjection{schedules::Rank{1}, parse_action("1STEP"), FaultInjection::Kind::stall};
  WorkerHarness h(std::move(o));
  h.start();
  ASSERT_TRUE(WorkerHarness::eventually([&] {
    return h.describe_ranks() == "rank 0 waits at the start of step 1, rank 1 in 1STEP (injected stall)";
  })) << h.describe_ranks();
  h.control().fail("stalled (the test's watchdog)");
  h.join();
  EXPECT_EQ(h.error(), "stalled (the test's watchdog)");
  EXPECT_EQ(h.describe_ranks(), "rank 0 has stopped, rank 1 has stopped");
  EXPECT_EQ(h.log().actions(schedules::Rank{0}), (Strings{"0F0", "0SEND_F0", "0RECV_B0", "0B0", "0STEP"}));
}

// The run's error with `o` after `script` has set the fakes up; every worker
// has left, each device drained once.
template <class Script>
std::string scripted_run_error(TrainOptions o, Script script) {
  WorkerHarness h(std::move(o));
  script(h);
  h.run();
  EXPECT_TRUE(h.control().all_exited());
  for (int r = 0; r < h.lowered().num_ranks; ++r) {
    const Strings& events = h.device(r).events();
    EXPECT_EQ(std::count(events.begin(), events.end(), "drain"), 1) << "rank " << r;
    EXPECT_EQ(events.back(), "drain") << "rank " << r;
  }
  return h.error();
}

TEST(Worker, AnInjectedFaultFailsTheRunNamingTheRankAndTheAction) {
  for (const std::string at : {"1F1", "1RECV_F0", "1B0", "1SEND_B1", "1STEP"}) {
    TrainOptions o = two_by_two();
    o.fault = FaultInjection{schedules::Rank{1}, parse_action(at)};
    EXPECT_EQ(scripted_run_error(o, [](WorkerHarness&) {}), "rank 1 failed in " + at + ": injected fault");
  }
  TrainOptions o = two_by_two();
  o.fault = FaultInjection{schedules::Rank{0}, parse_action("0SEND_F1")};
  WorkerHarness h(std::move(o));
  h.run();
  EXPECT_EQ(h.error(), "rank 0 failed in 0SEND_F1: injected fault");
  // The fault comes before the action: the link never saw 0SEND_F1.
  EXPECT_EQ(h.log().actions(schedules::Rank{0}), (Strings{"0F0", "0SEND_F0", "0F1"}));
  EXPECT_EQ(h.describe_ranks(), "rank 0 has stopped, rank 1 has stopped");
  EXPECT_EQ(h.link().finish_aborts(), 2);
}

TEST(Worker, AStageThatThrowsFailsTheRunNamingTheRankAndTheAction) {
  struct Case {
    RecomputePolicy recompute;
    int stage;
    std::string throw_at;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {RecomputePolicy::never, 1, "1F1", "rank 1 failed in 1F1: out of memory"},
           {RecomputePolicy::never, 1, "1B0", "rank 1 failed in 1B0: out of memory"},
           {RecomputePolicy::never, 0, "0STEP", "rank 0 failed in 0STEP: out of memory"},
           {RecomputePolicy::stage, 0, "0R1", "rank 0 failed in 0R1: out of memory"},
           // Dropping the stash is part of the forward.
           {RecomputePolicy::stage, 1, "1DROP0", "rank 1 failed in 1F0: out of memory"},
       }) {
    EXPECT_EQ(scripted_run_error(two_by_two(c.recompute),
                                 [&](WorkerHarness& h) {
                                   h.stage(c.stage).script.throw_at = c.throw_at;
                                   h.stage(c.stage).script.throw_message = "out of memory";
                                 }),
              c.error);
  }
}

TEST(Worker, AFailedRunsWorkersDropTheirStashesAndAFinishedRunsKeepNone) {
  WorkerHarness failed(two_by_two());
  failed.stage(1).script.throw_at = "1B0";
  failed.run();
  EXPECT_EQ(failed.error(), "rank 1 failed in 1B0: scripted failure");
  // Rank 0 held both forwards' stashes, rank 1 that of 1F0 (1B1 had run):
  // each worker gave them back as it left, the one that failed and the one
  // the abort stopped.
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(failed.stage(r).stash_drops(), 1) << "rank " << r;
    EXPECT_EQ(failed.account(r).bytes(), 0) << "rank " << r;
    EXPECT_GT(failed.account(r).peak(), 0) << "rank " << r;
  }
  WorkerHarness finished(two_by_two());
  finished.run();
  EXPECT_EQ(finished.error(), "no error");
  for (int r = 0; r < 2; ++r) EXPECT_EQ(finished.stage(r).stash_drops(), 0) << "rank " << r;
}

TEST(Worker, AStageThatThrowsANonStandardExceptionIsNamedByItsAction) {
  const std::string error = scripted_run_error(two_by_two(), [](WorkerHarness& h) {
    h.stage(1).script.throw_at = "1F1";
    h.stage(1).script.throw_non_std = true;
  });
  EXPECT_EQ(error, "rank 1 failed in 1F1: unknown exception");
}

TEST(Worker, AThrowBetweenActionsFailsTheRunNamingTheStep) {
  struct Case {
    int rank;
    std::string call;
    int step;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {0, "enter_thread", 0, "rank 0 failed at step 0: device lost"},
           {1, "upload", 1, "rank 1 failed at step 1: device lost"},
           {0, "data_ready", 2, "rank 0 failed at step 2: device lost"},
           {0, "finish_step", 1, "rank 0 failed at step 1: device lost"},
           {1, "sum", 2, "rank 1 failed at step 2: device lost"},
       }) {
    TrainOptions o = two_by_two();
    o.steps = 3;
    EXPECT_EQ(scripted_run_error(o,
                                 [&](WorkerHarness& h) {
                                   fake::DeviceScript& script = h.device(c.rank).script;
                                   script.throw_in = c.call;
                                   script.throw_at_step = c.step;
                                   script.throw_message = "device lost";
                                 }),
              c.error)
        << c.call;
  }
}

TEST(Worker, CheckFiniteFailsOnANonFiniteLossOrGradient) {
  TrainOptions o = two_by_two();
  o.check_finite = true;
  EXPECT_EQ(scripted_run_error(o, [](WorkerHarness& h) { h.device(1).script.all_finite = false; }),
            "rank 1 failed in 1F0: non-finite loss");
  EXPECT_EQ(scripted_run_error(o, [](WorkerHarness& h) { h.device(0).script.all_finite = false; }),
            "rank 0 failed in 0B1: non-finite input gradient");
  EXPECT_EQ(scripted_run_error(o, [](WorkerHarness& h) { h.stage(0).script.non_finite_gradient = "block0.w1"; }),
            "rank 0 failed in 0B1: non-finite gradient of block0.w1");
  // An empty input gradient (token ids) is not read back.
  EXPECT_EQ(scripted_run_error(o,
                               [](WorkerHarness& h) {
                                 h.device(0).script.all_finite = false;
                                 h.stage(0).script.empty_input_gradient = true;
                               }),
            "no error");
}

TEST(Worker, CheckFiniteReadsBackTheLossesAndGradientsAndOnlyThen) {
  TrainOptions o = two_by_two();
  o.check_finite = true;
  WorkerHarness checked(o);
  checked.run();
  EXPECT_EQ(checked.device(1).events(),
            (Strings{"enter_thread", "upload y0@0", "upload dl[4]@0", "upload y1@0", "upload dl[4]@0",
                     "data_ready", "all_finite 1F0@0", "all_finite 1F1@0", "all_finite 1B1@0",
                     "all_finite 1B0@0", "finish_step", "sum 1F0@0", "sum 1F1@0", "drain"}));
  EXPECT_EQ(checked.device(0).events(), (Strings{"enter_thread", "upload x0@0", "upload x1@0", "data_ready",
                                                 "all_finite 0B1@0", "all_finite 0B0@0", "finish_step", "drain"}));
  o.check_finite = false;
  WorkerHarness unchecked(o);
  unchecked.device(0).script.all_finite = false;
  unchecked.device(1).script.all_finite = false;
  unchecked.stage(1).script.non_finite_gradient = "block2.w1";
  unchecked.run();
  EXPECT_EQ(unchecked.error(), "no error");
  for (int r = 0; r < 2; ++r) {
    for (const std::string& e : unchecked.device(r).events()) {
      EXPECT_EQ(e.find("all_finite"), std::string::npos) << e;
    }
  }
}

}  // namespace
}  // namespace gpipe::exec
