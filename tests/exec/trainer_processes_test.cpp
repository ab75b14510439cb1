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
// - a rank that fails ends every process with an error, none hangs;
// - with replicas (D pipelines of K processes at one store, as the CUDA
//   backend runs them over NCCL), each replica's ranks find each other, the
//   replicas' sums meet, replica 0's loss stage alone reports, and the
//   training is the one-process run of the global batch.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/dist/store_process_group.hpp"
#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/gradient_reducer.hpp"
#include "exec/runtime/mailboxes.hpp"
#include "exec/runtime/trainer.hpp"
#include "tests/exec/trainer_support.hpp"
#include "tests/exec/transparency_support.hpp"

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
    GradientReducer<Tensor>* reducer = nullptr;  // replicas: the thread-processes' sums
  };

  class Run {
   public:
    Run(const TrainOptions& /*options*/, const RunSettings& settings, const Placement& /*where*/,
        const Options& options)
        : timer_(settings.schedule->num_ranks, settings.measured_steps),
          link_(*options.mailboxes, &timer_),
          reducer_(options.reducer),
          devices_(static_cast<std::size_t>(settings.schedule->num_ranks)) {}

    [[nodiscard]] RankDevice& device(Rank rank) { return devices_.at(rank.at()); }
    [[nodiscard]] Context context(Rank /*rank*/) const { return {}; }
    template <class F>
    void in_context(Rank /*rank*/, F&& f) {
      f();
    }
    [[nodiscard]] Link<Tensor>& link() { return link_; }
    [[nodiscard]] ActionTimer& timer() { return timer_; }
    [[nodiscard]] GradientReducer<Tensor>* gradient_reducer() const { return reducer_; }
    [[nodiscard]] MemoryPlacement memory_placement() const { return MemoryPlacement::host_time; }
    void weights_ready() {}
    void finish() {}
    void abandon() noexcept {}
    [[nodiscard]] std::string device_name() const { return "thread-processes"; }
    [[nodiscard]] Report report(int /*median_slot*/) const { return {}; }

   private:
    HostTimer timer_;
    SharedMailboxLink link_;
    GradientReducer<Tensor>* reducer_;
    std::vector<RankDevice> devices_;
  };
};
static_assert(TrainingBackend<CpuAsProcesses> && GradientReducingBackend<CpuAsProcesses>);

// Sums between the thread-processes of D replicas, as NCCL's communicators
// would make them: each sum named by its key meets the D participants, and
// each gets the total, added in participant order (so every replica gets
// the same bits).
template <class T>
class ThreadSums {
 public:
  explicit ThreadSums(int size) : size_(size) {}

  void sum(const std::string& key, int who, std::span<T> values) {
    std::unique_lock lock(mutex_);
    Meeting& m = meetings_[key];
    if (m.parts.empty()) m.parts.resize(static_cast<std::size_t>(size_));
    m.parts[static_cast<std::size_t>(who)] = values;
    if (++m.arrived == size_) {
      m.total.assign(values.size(), T{});
      for (const std::span<T> part : m.parts) {
        for (std::size_t i = 0; i < part.size(); ++i) m.total[i] += part[i];
      }
      changed_.notify_all();
    }
    changed_.wait(lock, [&] { return m.arrived == size_ || aborted_; });
    if (aborted_) throw Aborted();
    std::copy(m.total.begin(), m.total.end(), values.begin());
    if (++m.left == size_) meetings_.erase(key);
  }
  void abort() {
    const std::lock_guard lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

 private:
  struct Meeting {
    std::vector<std::span<T>> parts;
    std::vector<T> total;
    int arrived = 0;
    int left = 0;
  };
  int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, Meeting> meetings_;
  bool aborted_ = false;
};

// One replica-process's reducer over the ThreadSums every replica shares:
// the whole sum at WAIT_REDUCE_GRAD (where NCCL's would have run meanwhile).
class ThreadReducer final : public GradientReducer<Tensor> {
 public:
  ThreadReducer(ThreadSums<float>& floats, ThreadSums<double>& doubles, int replica, int rank)
      : floats_(floats), doubles_(doubles), replica_(replica), rank_(rank) {}

  void start(schedules::Stage stage, std::vector<Tensor*> gradients) override {
    pending_[stage.value] = std::move(gradients);
  }
  void progress() override {}
  Times wait(schedules::Stage stage) override {
    const std::vector<Tensor*> gradients = std::move(pending_.at(stage.value));
    pending_.erase(stage.value);
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      floats_.sum(next_key(fmt::format("stage{}/{}", stage.value, i)), replica_, gradients[i]->f32());
    }
    const auto now = Clock::now();
    return {now, now};
  }
  double sum(double value) override {
    doubles_.sum(next_key("loss"), replica_, std::span<double>(&value, 1));
    return value;
  }
  void sum_in_place(Tensor& tensor) override { floats_.sum(next_key("tied"), replica_, tensor.f32()); }
  void gather(schedules::Stage /*stage*/, std::vector<Tensor*> /*values*/) override {
    throw std::logic_error("no ZeRO between thread-processes");
  }
  void abort() override {
    floats_.abort();
    doubles_.abort();
  }

 private:
  // Every replica's process of a rank makes the same calls in the same
  // order: the n-th of a name is the same sum in each.
  std::string next_key(const std::string& name) { return fmt::format("rank{}/{}/{}", rank_, name, count_[name]++); }

  ThreadSums<float>& floats_;
  ThreadSums<double>& doubles_;
  int replica_;
  int rank_;
  std::map<int, std::vector<Tensor*>> pending_;
  std::map<std::string, int> count_;
};

struct ProcessOutcome {
  TrainResult result;
  std::string error;  // what the process threw, "" when it returned
};

// Runs `options` with each rank of each of its D replicas (the schedule's
// data_parallel) in its own thread-process, K x D of them at one store
// (StoreProcessGroup's layout: world rank d K + r); rank 0's process serves
// the store, whose waits end after `timeout`. Each replica has its own
// mailboxes and, with D > 1, every process its own reducer over shared sums.
std::vector<ProcessOutcome> run_as_processes(const TrainOptions& options, std::chrono::milliseconds timeout) {
  const int ranks = options.schedule.num_ranks;
  const int replicas = options.schedule.data_parallel;
  const int world = ranks * replicas;
  std::vector<std::unique_ptr<Mailboxes<Tensor>>> mailboxes;
  for (int d = 0; d < replicas; ++d) mailboxes.push_back(std::make_unique<Mailboxes<Tensor>>(ranks));
  ThreadSums<float> floats(replicas);
  ThreadSums<double> doubles(replicas);
  TcpStore server("127.0.0.1", 0, /*is_server=*/true, timeout);
  std::vector<ProcessOutcome> outcomes(static_cast<std::size_t>(world));
  std::vector<std::thread> processes;
  for (int w = 0; w < world; ++w) {
    processes.emplace_back([&, w] {
      ProcessOutcome& out = outcomes[static_cast<std::size_t>(w)];
      Mailboxes<Tensor>& mine = *mailboxes[static_cast<std::size_t>(w / ranks)];
      try {
        std::unique_ptr<TcpStore> client;
        if (w > 0) client = std::make_unique<TcpStore>("127.0.0.1", server.port(), false, timeout);
        StoreProcessGroup group(w == 0 ? server : *client, w, world, ranks);
        ThreadReducer reducer(floats, doubles, group.replica(), group.rank());
        out.result =
            train_in_group<CpuAsProcesses>(options, {&mine, replicas > 1 ? &reducer : nullptr}, group).result;
      } catch (const std::exception& e) {
        out.error = e.what();
        mine.abort();  // as a failed process's peers lose their connection to it
        floats.abort();
        doubles.abort();
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
  c.recompute = schedules::RecomputePolicy::stage_except_last;
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

// Two replicas of a 2-rank pipeline, each on its own 4 samples, train as one
// process trains the 8 (transparency's tolerance: the sums' order differs),
// and replica 0's loss stage alone reports, with its own replica's parts.
TEST(TrainerProcesses, ReplicasAtOneStoreTrainTheGlobalBatch) {
  RunConfig c;
  c.model = "mlp:layers=3,hidden=16";
  c.schedule = "1f1b";
  c.stages = 2;
  c.microbatches = 2;
  c.batch = 4;
  c.steps = 3;
  c.optimizer.kind = models::Optimizer::momentum;
  TrainOptions options = trainer_test::options_for(c);
  options.schedule.data_parallel = 2;
  const std::vector<ProcessOutcome> outcomes = run_as_processes(options, std::chrono::seconds(60));
  RunConfig whole = c;
  whole.batch = 8;
  const TrainResult reference = trainer_test::one_stage_reference(whole);
  const models::Model model = models::parse_model(c.model);
  // World ranks 0, 1: replica 0; 2, 3: replica 1. The loss stage is rank 1.
  for (int w = 0; w < 4; ++w) {
    const ProcessOutcome& out = outcomes[static_cast<std::size_t>(w)];
    ASSERT_EQ(out.error, "") << "process " << w;
    EXPECT_EQ(out.result.reporter, w == 1) << "process " << w;
    // Each process's own stage's weights (the partition is 2 + 2 of the 4 layers).
    const std::size_t first = w % 2 == 0 ? 0 : 2;
    ASSERT_EQ(out.result.weights.size(), 2U) << "process " << w;
    for (std::size_t l = 0; l < 2; ++l) {
      for (std::size_t p = 0; p < reference.weights[first + l].size(); ++p) {
        EXPECT_LE(trainer_test::relative_error(out.result.weights[l][p], reference.weights[first + l][p]),
                  trainer_test::kTransparencyTolerance)
            << "process " << w << " layer " << first + l << " parameter " << p;
      }
    }
  }
  const TrainResult& reported = outcomes[1].result;
  ASSERT_EQ(reported.losses.size(), reference.losses.size());
  for (std::size_t s = 0; s < reference.losses.size(); ++s) {
    EXPECT_NEAR(reported.losses[s], reference.losses[s], trainer_test::kTransparencyTolerance * reference.losses[s]);
  }
  // Its replica's two ranks, each holding its own stage's REDUCE_GRAD.
  ASSERT_EQ(reported.metrics.ranks.size(), 2U);
  EXPECT_TRUE(std::ranges::any_of(reported.timeline.actions, [](const timelines::TimedAction& a) {
    return a.rank.value == 0 && a.action.kind == schedules::ActionKind::REDUCE_GRAD;
  }));
}

}  // namespace
}  // namespace gpipe::exec
