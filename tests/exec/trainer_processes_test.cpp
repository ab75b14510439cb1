// The trainer with one rank per process (train_placed with a rendezvous
// store), run on the CPU with threads standing in for the processes: each
// "process" has its own store client, timer, memory logs and workers, and
// only the messages go through a mailbox they share (as MPI or NCCL would
// carry them between real processes). What the launch mode must give:
// - the process of the loss stage alone reports: the losses, a timeline with
//   every rank's actions in program order, every rank's static bytes, and
//   activation peaks equal to the same run with every rank in one process;
// - the losses equal that run's exactly (the same math in the same order);
// - every process keeps the weights of its own stages;
// - a rank that fails ends every process with an error, none hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/mailboxes.hpp"
#include "exec/runtime/trainer.hpp"
#include "schedules/error.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::Rank;
using trainer_test::RunConfig;

// Messages between the thread-processes: one set of mailboxes for all,
// each process timing its own transfers on its own timer.
class SharedMailboxLink final : public Link<Tensor> {
 public:
  SharedMailboxLink(Mailboxes<Tensor>& mailboxes, ActionTimer* timer)
      : mailboxes_(mailboxes), timer_(timer) {}

  void send(Rank from, Rank to, const MessageTag& tag, Tensor tensor, const ActionMark& mark) override {
    const TimedScope timed(timer_, mark);
    tensor.charge_to(nullptr);
    mailboxes_.post(from, to, tag, std::move(tensor));
  }
  [[nodiscard]] Tensor receive(Rank to, Rank from, const MessageTag& tag, const ActionMark& mark) override {
    const TimedScope timed(timer_, mark);
    return mailboxes_.take(to, from, tag);
  }
  void abort() override { mailboxes_.abort(); }

 private:
  Mailboxes<Tensor>& mailboxes_;
  ActionTimer* timer_;
};

// The CPU backend, with the ranks of a run placed in thread-processes.
struct CpuAsProcesses : cpu::CpuBackend {
  using Stage = exec::Stage<CpuAsProcesses>;
  struct Options {
    Mailboxes<Tensor>* mailboxes = nullptr;
  };

  class Run {
   public:
    Run(const TrainOptions& /*options*/, const RunSettings& settings, const Placement& /*where*/,
        const Options& options)
        : timer_(settings.schedule->num_ranks, settings.measured_steps),
          link_(*options.mailboxes, &timer_),
          devices_(static_cast<std::size_t>(settings.schedule->num_ranks)) {}

    [[nodiscard]] RankDevice& device(Rank rank) { return devices_.at(rank.at()); }
    [[nodiscard]] Context context(Rank /*rank*/) const { return {}; }
    template <class F>
    void in_context(Rank /*rank*/, F&& f) {
      f();
    }
    [[nodiscard]] Link<Tensor>& link() { return link_; }
    [[nodiscard]] ActionTimer& timer() { return timer_; }
    [[nodiscard]] MemoryPlacement memory_placement() const { return MemoryPlacement::host_time; }
    void weights_ready() {}
    void finish() {}
    void abandon() noexcept {}
    [[nodiscard]] std::string device_name() const { return "thread-processes"; }
    [[nodiscard]] Report report(int /*median_slot*/) const { return {}; }

   private:
    HostTimer timer_;
    SharedMailboxLink link_;
    std::vector<RankDevice> devices_;
  };
};

struct ProcessOutcome {
  TrainResult result;
  std::string error;  // what the process threw, "" when it returned
};

// Runs `options` with each rank in its own thread-process; rank 0's process
// serves the store, whose waits end after `timeout`.
std::vector<ProcessOutcome> run_as_processes(const TrainOptions& options,
                                             std::chrono::milliseconds timeout) {
  const int world = options.schedule.num_ranks;
  Mailboxes<Tensor> mailboxes(world);
  TcpStore server("127.0.0.1", 0, /*is_server=*/true, timeout);
  std::vector<ProcessOutcome> outcomes(static_cast<std::size_t>(world));
  std::vector<std::thread> processes;
  for (int r = 0; r < world; ++r) {
    processes.emplace_back([&, r] {
      ProcessOutcome& out = outcomes[static_cast<std::size_t>(r)];
      try {
        std::unique_ptr<TcpStore> client;
        if (r > 0) client = std::make_unique<TcpStore>("127.0.0.1", server.port(), false, timeout);
        StoreProcessGroup group(r == 0 ? server : *client, r, world);
        out.result = train_in_group<CpuAsProcesses>(options, {&mailboxes}, group).result;
      } catch (const std::exception& e) {
        out.error = e.what();
        mailboxes.abort();  // as a failed process's peers lose their connection to it
      }
    });
  }
  for (auto& p : processes) p.join();
  return outcomes;
}

RunConfig four_ranks() {
  RunConfig c;
  c.model = "mlp:layers=6,hidden=16";
  c.schedule = "1f1b";
  c.stages = 4;
  c.microbatches = 6;
  c.batch = 12;
  c.recompute = schedules::RecomputePolicy::except_last;
  c.steps = 3;
  return c;
}

TEST(TrainerProcesses, TheLossStageReportsWhatOneProcessWouldHaveMeasured) {
  TrainOptions options = trainer_test::options_for(four_ranks());
  options.measured_steps = 2;
  const TrainResult in_process = cpu::train(options);
  const std::vector<ProcessOutcome> outcomes = run_as_processes(options, std::chrono::seconds(60));

  const int reporter = 3;  // the loss stage's rank
  for (int r = 0; r < 4; ++r) {
    const ProcessOutcome& out = outcomes[static_cast<std::size_t>(r)];
    ASSERT_EQ(out.error, "") << "rank " << r;
    EXPECT_EQ(out.result.reporter, r == reporter) << "rank " << r;
    // Each process keeps its own stage's weights (the uniform partition: 2, 2, 2, 1 layers).
    EXPECT_EQ(out.result.weights.size(), r < 3 ? 2U : 1U) << "rank " << r;
  }
  const TrainResult& reported = outcomes[reporter].result;
  EXPECT_EQ(reported.losses, in_process.losses);  // bit for bit: the same math in the same order
  EXPECT_EQ(reported.timeline.info.source, "cpu");
  EXPECT_EQ(reported.timeline.info.static_bytes, in_process.timeline.info.static_bytes);
  ASSERT_EQ(reported.timeline.actions.size(), in_process.timeline.actions.size());
  for (std::size_t i = 0; i < reported.timeline.actions.size(); ++i) {
    EXPECT_EQ(reported.timeline.actions[i].action, in_process.timeline.actions[i].action) << i;
    EXPECT_EQ(reported.timeline.actions[i].rank, in_process.timeline.actions[i].rank) << i;
  }
  ASSERT_EQ(reported.metrics.ranks.size(), 4U);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(reported.metrics.ranks[r].peak_activation_bytes,
              in_process.metrics.ranks[r].peak_activation_bytes)
        << "rank " << r;
  }
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(outcomes[static_cast<std::size_t>(r)].result.losses.empty());
}

TEST(TrainerProcesses, AFailedRankEndsEveryProcess) {
  TrainOptions options = trainer_test::options_for(four_ranks());
  options.fault = FaultInjection{Rank{2}, schedules::make_action(2, schedules::ActionKind::F, 1),
                                 FaultInjection::Kind::fail};
  // No rank can leave step 0 without rank 2; the others' receives end when
  // its messages stop (here: the mailbox it aborts, as a dead peer closes a
  // connection), and each process says so rather than report a short run.
  const std::vector<ProcessOutcome> outcomes = run_as_processes(options, std::chrono::seconds(60));
  EXPECT_EQ(outcomes[2].error, "rank 2 failed in 2F1: injected fault");
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(outcomes[static_cast<std::size_t>(r)].error,
              fmt::format("rank {} (in step 0) stopped with no error of this process: its link was "
                          "closed from outside (a peer process failed?)",
                          r));
  }
}

}  // namespace
}  // namespace gpipe::exec
