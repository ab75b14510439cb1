#include "exec/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "exec/in_process_transport.hpp"
#include "exec/memory_recorder.hpp"
#include "exec/run_control.hpp"
#include "exec/stage_state.hpp"
#include "exec/step_barrier.hpp"
#include "exec/worker.hpp"
#include "schedules/error.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "sim/scenario.hpp"

namespace gpipe::exec {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;

namespace {

void check_options(const TrainOptions& o) {
  const int num_layers = static_cast<int>(o.model.layers.size());
  if (o.steps < 1) throw InputError(fmt::format("--steps must be at least 1, got {}", o.steps));
  if (o.measured_steps < 1 || o.measured_steps > o.steps) {
    throw InputError(fmt::format("measured steps must be in [1, steps = {}], got {}", o.steps,
                                 o.measured_steps));
  }
  if (!(o.watchdog_seconds > 0)) {
    throw InputError(
        fmt::format("the watchdog needs a positive time, got {} s", o.watchdog_seconds));
  }
  if (o.partition.num_stages() != o.schedule.num_stages) {
    throw InputError(fmt::format("--partition {} has {} stages but the schedule has {}",
                                 models::to_string(o.partition), o.partition.num_stages(),
                                 o.schedule.num_stages));
  }
  for (int n : o.partition.layers_per_stage) {
    if (n < 1) {
      throw InputError(fmt::format("--partition {}: every stage needs at least one layer",
                                   models::to_string(o.partition)));
    }
  }
  if (o.partition.num_layers() != num_layers) {
    throw InputError(fmt::format("--partition {} covers {} layers but model {} has {}",
                                 models::to_string(o.partition), o.partition.num_layers(),
                                 o.model.spec, num_layers));
  }
  for (const auto& list : o.schedule.ranks) {
    for (const Action& a : list) {
      if (a.kind == ActionKind::I || a.kind == ActionKind::W) {
        throw InputError(
            fmt::format("schedule {}: the cpu executor runs F/B schedules; {} (a split "
                        "backward, I/W) is not supported",
                        o.schedule.name, to_string(a)));
      }
    }
  }
}

// The fault must name an action the run will reach, or the test it serves would pass vacuously.
void check_fault(const FaultInjection& fault, const schedules::Schedule& lowered) {
  const std::string text = fmt::format("{}:{}", fault.rank.value, to_string(fault.action));
  if (fault.rank.value < 0 || fault.rank.value >= lowered.num_ranks) {
    throw InputError(fmt::format("--inject-fault {}: there is no rank {} (the schedule has {})",
                                 text, fault.rank.value, lowered.num_ranks));
  }
  const auto& list = lowered.actions(fault.rank);
  if (std::find(list.begin(), list.end(), fault.action) == list.end()) {
    throw InputError(fmt::format("--inject-fault {}: rank {} runs no action {}", text,
                                 fault.rank.value, to_string(fault.action)));
  }
}

// The index of the timeline of median step time (the lower median).
std::size_t median_step(const std::vector<schedules::Timeline>& steps) {
  std::vector<std::size_t> order(steps.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return schedules::makespan_ns(steps[a]) < schedules::makespan_ns(steps[b]);
  });
  return order[(order.size() - 1) / 2];
}

RunPlan make_plan(const TrainOptions& o, const schedules::Schedule& lowered) {
  RunPlan plan;
  plan.model = &o.model;
  plan.schedule = &lowered;
  plan.batch = o.batch;
  plan.microbatch_sizes = sim::split_batch(o.batch, lowered.num_microbatches);
  std::int64_t offset = 0;
  for (int size : plan.microbatch_sizes) {
    plan.microbatch_offsets.push_back(offset);
    offset += size;
  }
  plan.recomputed.assign(
      static_cast<std::size_t>(lowered.num_stages),
      std::vector<bool>(static_cast<std::size_t>(lowered.num_microbatches), false));
  for (const auto& list : lowered.ranks) {
    for (const Action& a : list) {
      if (a.kind == ActionKind::R) plan.recomputed[a.stage.at()][a.microbatch.at()] = true;
    }
  }
  plan.steps = o.steps;
  plan.measured_steps = o.measured_steps;
  plan.seed = o.seed;
  plan.check_finite = o.check_finite;
  plan.fault = o.fault;
  return plan;
}

// The main thread's part while the workers run: hands each finished step's
// loss to on_step, and stops the run when no action has finished for the
// watchdog's time. Returns once every worker has left.
std::exception_ptr supervise(const TrainOptions& o, RunControl& control,
                             const schedules::Schedule& lowered) {
  using namespace std::chrono;
  const auto watchdog = duration<double>(o.watchdog_seconds);
  const auto poll =
      duration_cast<RunControl::Clock::duration>(std::min(duration<double>(0.05), watchdog / 5));
  std::exception_ptr callback_error;
  std::size_t reported = 0;
  std::uint64_t seen = 0;
  while (true) {
    seen = control.wait_for_change(seen, poll);
    // Read before the losses: a worker publishes its last loss before it
    // exits, so once all have exited every loss is there to hand on.
    const bool exited = control.all_exited();
    if (o.on_step && !callback_error) {
      const std::vector<double> losses = control.losses();
      try {
        for (; reported < losses.size(); ++reported)
          o.on_step(static_cast<int>(reported), losses[reported]);
      } catch (...) {
        callback_error = std::current_exception();
        control.fail("the on_step callback failed");
      }
    }
    if (exited) return callback_error;
    const double idle = control.idle_seconds();
    if (!control.aborted() && idle > o.watchdog_seconds) {
      control.fail(fmt::format("stalled: no action finished for {:.1f} s; {}", idle,
                               control.describe_ranks(lowered.ranks)));
    }
  }
}

}  // namespace

TrainResult train(const TrainOptions& o) {
  check_options(o);
  schedules::validate(o.schedule);
  const schedules::Schedule lowered = schedules::lower(o.schedule);
  if (o.fault) check_fault(*o.fault, lowered);
  const RunPlan plan = make_plan(o, lowered);
  const int num_ranks = lowered.num_ranks;
  const int num_stages = lowered.num_stages;

  // Declared in this order so that the stages (whose stashes are charged to
  // the accounts, which report to the recorders) go first.
  std::vector<std::unique_ptr<MemoryRecorder>> recorders;
  std::vector<std::unique_ptr<MemoryAccount>> accounts;
  for (int r = 0; r < num_ranks; ++r) {
    recorders.push_back(std::make_unique<MemoryRecorder>(Rank{r}));
    accounts.push_back(std::make_unique<MemoryAccount>());
    accounts.back()->set_observer(
        [recorder = recorders.back().get()](std::int64_t bytes) { recorder->record(bytes); });
  }
  std::vector<std::unique_ptr<StageState>> stages;
  for (int s = 0; s < num_stages; ++s) {
    const Rank rank = lowered.rank_of(schedules::Stage{s});
    stages.push_back(std::make_unique<StageState>(
        o.model, o.partition.first_layer(s), o.partition.end_layer(s), o.seed, o.optimizer,
        lowered.num_microbatches, accounts[rank.at()].get()));
  }

  InProcessTransport transport(num_ranks);
  StepBarrier barrier(num_ranks);
  RunControl control(num_ranks);
  control.add_abort_hook([&] { transport.abort(); });
  control.add_abort_hook([&] { barrier.abort(); });

  std::vector<std::unique_ptr<Worker>> workers;
  for (int r = 0; r < num_ranks; ++r) {
    std::vector<StageState*> own(static_cast<std::size_t>(num_stages), nullptr);
    for (int s = 0; s < num_stages; ++s) {
      if (lowered.rank_of(schedules::Stage{s}) == Rank{r})
        own[static_cast<std::size_t>(s)] = stages[static_cast<std::size_t>(s)].get();
    }
    workers.push_back(std::make_unique<Worker>(
        Rank{r}, plan, std::move(own),
        WorkerLinks{&transport, &control, &barrier, recorders[static_cast<std::size_t>(r)].get()}));
  }

  // However this function leaves, no worker outlives it: an early exit (an
  // exception on this thread) aborts the run and joins every started thread.
  std::vector<std::thread> threads;
  struct JoinAll {
    RunControl& control;
    std::vector<std::thread>& threads;
    ~JoinAll() {
      if (threads.empty() || !threads.front().joinable()) return;
      control.fail("the run was stopped: train() itself failed");
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join_all{control, threads};
  threads.reserve(workers.size());
  for (auto& worker : workers) threads.emplace_back([w = worker.get()] { w->run(); });
  const std::exception_ptr callback_error = supervise(o, control, lowered);
  for (auto& t : threads) t.join();

  if (callback_error) std::rethrow_exception(callback_error);
  if (auto error = control.error()) throw RunError(*error);

  TrainResult result;
  result.losses = control.losses();
  schedules::TimelineInfo info = schedules::info_of(lowered);
  info.source = "cpu";
  info.device = cpu_device_name();
  info.batch_size = o.batch;
  info.static_bytes.assign(static_cast<std::size_t>(num_ranks), 0);
  for (int s = 0; s < num_stages; ++s) {
    info.static_bytes[lowered.rank_of(schedules::Stage{s}).at()] +=
        stages[static_cast<std::size_t>(s)]->static_bytes();
  }
  std::vector<schedules::Timeline> measured(static_cast<std::size_t>(o.measured_steps));
  for (std::size_t k = 0; k < measured.size(); ++k) {
    schedules::Timeline& timeline = measured[k];
    timeline.info = info;
    for (int r = 0; r < num_ranks; ++r) {
      const auto& actions = workers[static_cast<std::size_t>(r)]->timelines().at(k);
      timeline.actions.insert(timeline.actions.end(), actions.begin(), actions.end());
      const auto samples = recorders[static_cast<std::size_t>(r)]->samples(k);
      timeline.memory.insert(timeline.memory.end(), samples.begin(), samples.end());
    }
  }
  const std::size_t median = median_step(measured);
  result.timeline = std::move(measured[median]);
  result.timeline_step = o.steps - o.measured_steps + static_cast<int>(median);
  result.metrics = schedules::compute_metrics(result.timeline);
  for (const auto& stage : stages) {
    for (const auto& layer : stage->layers()) {
      auto& values = result.weights.emplace_back();
      for (const cpu::Parameter& p : layer->parameters()) {
        values.emplace_back(p.value.f32().begin(), p.value.f32().end());
      }
    }
  }
  return result;
}

}  // namespace gpipe::exec
