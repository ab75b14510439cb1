// Training a model through a pipeline schedule, for every backend. The ranks
// this process runs each get a worker thread (exec/runtime/worker.hpp), the
// trainer supervises them (the first error aborts all; a watchdog stops a run
// in which nothing finishes), and assembles what they measured into a
// Timeline: the intervals of every action (exec/runtime/step_timeline.hpp)
// and each rank's memory, scored by the same metrics as the simulator's
// prediction.
//
// Where the ranks live (Placement, placement.hpp): all of them as threads of
// this process, or one of them in this process and the others in their own
// processes, a ProcessGroup (exec/runtime/process_group.hpp: the rendezvous
// store's for NCCL, MPI's for the CPU): there each step starts at the group's
// barrier, the process of the loss stage gathers every rank's part and alone
// reports, and a failure is announced to the other processes.
//
// The backend `B` is a TrainingBackend (training_backend.hpp): what the
// worker and the stage need, and what the trainer needs besides (its name,
// options and report, whether this machine can run it, and its resources for
// a run, B::Run); the optional parts (a split backward, a reduction over
// replicas) are concepts of their own there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/runtime/measurement.hpp"
#include "exec/layers/memory_account.hpp"
#include "exec/runtime/memory_log.hpp"
#include "exec/runtime/placement.hpp"
#include "exec/runtime/process_group.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_settings.hpp"
#include "exec/runtime/stage.hpp"
#include "exec/runtime/step_barrier.hpp"
#include "exec/runtime/supervise.hpp"
#include "exec/runtime/termination.hpp"
#include "exec/runtime/train_options.hpp"
#include "exec/runtime/training_backend.hpp"
#include "exec/runtime/worker.hpp"

namespace gpipe::exec {

template <TrainingBackend B>
struct Trained {
  TrainResult result;
  typename B::Report report;
  ClockAgreement clock;  // how the processes' intervals share one time base
};

namespace trainer_detail {

// Each placed rank's activation memory: the account its stages' stashes are
// charged to, and the log observing it; by rank, null for other processes'.
struct RankMemory {
  std::vector<std::unique_ptr<MemoryLog>> logs;
  std::vector<std::unique_ptr<MemoryAccount>> accounts;

  RankMemory(const Placement& where, int num_ranks)
      : logs(static_cast<std::size_t>(num_ranks)), accounts(static_cast<std::size_t>(num_ranks)) {
    for (const schedules::Rank r : where.local) {
      logs[r.at()] = std::make_unique<MemoryLog>(r);
      accounts[r.at()] = std::make_unique<MemoryAccount>();
      accounts[r.at()]->set_observer([log = logs[r.at()].get()](std::int64_t bytes) { log->record(bytes); });
    }
  }
};

// The stages of the placed ranks, made in their ranks' device contexts; by
// stage, null for other processes'.
template <TrainingBackend B>
std::vector<std::unique_ptr<Stage<B>>> make_stages(const TrainOptions& o, const RunSettings& settings,
                                                   const Placement& where, typename B::Run& run,
                                                   RankMemory& memory) {
  const schedules::Schedule& lowered = *settings.schedule;
  std::vector<std::unique_ptr<Stage<B>>> stages(static_cast<std::size_t>(lowered.num_stages));
  const std::optional<models::Checkpointing> checkpointing =
      lowered.recompute == schedules::RecomputePolicy::full
          ? std::optional<models::Checkpointing>(o.checkpointing.value_or(models::Checkpointing{}))
          : std::nullopt;
  for (int s = 0; s < lowered.num_stages; ++s) {
    const schedules::Rank rank = lowered.rank_of(schedules::Stage{s});
    if (!where.here(rank)) continue;
    run.in_context(rank, [&] {
      stages[static_cast<std::size_t>(s)] = std::make_unique<Stage<B>>(
          o.model, o.partition.first_layer(s), o.partition.end_layer(s), o.seed, o.optimizer,
          lowered.num_microbatches, memory.accounts[rank.at()].get(), run.context(rank), settings.zero_share(),
          checkpointing);
    });
  }
  return stages;
}

// A worker thread per placed rank, supervised until every one has left;
// returns the losses. On a failure the backend abandons the run and the
// run's error is thrown.
template <TrainingBackend B>
std::vector<double> run_workers(const TrainOptions& o, const RunSettings& settings, const Placement& where,
                                typename B::Run& run, const std::vector<std::unique_ptr<Stage<B>>>& stages,
                                RankMemory& memory) {
  const schedules::Schedule& lowered = *settings.schedule;
  StepBarrier barrier(static_cast<int>(where.local.size()));
  StepSync& sync = where.group != nullptr ? where.group->step_sync() : barrier;
  RunControl control(lowered.num_ranks);
  for (int r = 0; r < lowered.num_ranks; ++r) {
    if (!where.here(schedules::Rank{r})) control.place_elsewhere(schedules::Rank{r});
  }
  control.add_abort_hook([&] { run.link().abort(); });
  control.add_abort_hook([&] { sync.abort(); });
  if constexpr (GradientReducingBackend<B>) {
    if (run.gradient_reducer() != nullptr) control.add_abort_hook([&] { run.gradient_reducer()->abort(); });
  }

  std::vector<std::unique_ptr<Worker<B>>> workers;
  for (const schedules::Rank r : where.local) {
    std::vector<Stage<B>*> own(stages.size(), nullptr);
    for (std::size_t s = 0; s < stages.size(); ++s) {
      if (lowered.rank_of(schedules::Stage{static_cast<int>(s)}) == r) own[s] = stages[s].get();
    }
    WorkerServices<B> services{&run.link(), &control, &sync, &run.timer(), memory.logs[r.at()].get()};
    if constexpr (GradientReducingBackend<B>) services.reducer = run.gradient_reducer();
    workers.push_back(std::make_unique<Worker<B>>(r, settings, std::move(own), run.device(r), services));
  }
  std::vector<std::function<void()>> bodies;
  for (auto& worker : workers) bodies.emplace_back([w = worker.get()] { w->run(); });
  try {
    run_supervised(o, control, lowered, std::move(bodies));
  } catch (const std::exception& e) {
    run.abandon();  // the run's error is the one to report
    // Told to stop from outside, every process is being stopped: no time to wait for acknowledgements.
    if (where.group != nullptr && termination_signal() == 0) where.group->announce_failure(e.what());
    throw;
  } catch (...) {
    run.abandon();
    if (where.group != nullptr && termination_signal() == 0) where.group->announce_failure("a rank's process failed");
    throw;
  }
  return control.losses();
}

}  // namespace trainer_detail

namespace trainer_detail {

// The run of checked options (`settings`, and the lowered schedule it points
// to) on the ranks `where` places in this process.
template <TrainingBackend B>
[[nodiscard]] Trained<B> run_placed(const TrainOptions& o, const RunSettings& settings,
                                    const typename B::Options& backend_options,
                                    const Placement& where) {
  const schedules::Schedule& lowered = *settings.schedule;
  typename B::Run run(o, settings, where, backend_options);
  // Declared before the stages, whose stashes are charged to it.
  trainer_detail::RankMemory memory(where, lowered.num_ranks);
  const auto stages = trainer_detail::make_stages<B>(o, settings, where, run, memory);
  std::vector<std::int64_t> static_bytes(static_cast<std::size_t>(lowered.num_ranks), 0);
  for (std::size_t s = 0; s < stages.size(); ++s) {
    if (!stages[s]) continue;
    static_bytes[lowered.rank_of(schedules::Stage{static_cast<int>(s)}).at()] += stages[s]->static_bytes();
  }
  run.weights_ready();
  const std::vector<double> losses = trainer_detail::run_workers<B>(o, settings, where, run, stages, memory);
  run.finish();

  Trained<B> out;
  TrainResult& result = out.result;
  std::vector<RankPart> parts =
      local_parts(run.timer(), memory.logs, where.local, static_bytes, o.measured_steps);
  const schedules::Rank reporter = lowered.rank_of(schedules::Stage{lowered.num_stages - 1});
  if (where.group != nullptr) {
    parts = where.group->exchange_parts(parts.front(), reporter);
    // With data, tensor and context parallelism, replica 0's part 0 of
    // member 0 reports; the others' losses are the same sums.
    result.reporter = where.here(reporter) && where.group->replica() == 0 && where.group->tensor_parallel_rank() == 0 &&
                      where.group->context_parallel_rank() == 0;
    out.clock = where.group->clock();
  }
  for (std::size_t s = 0; s < stages.size(); ++s) {
    if (!stages[s]) continue;
    run.in_context(lowered.rank_of(schedules::Stage{static_cast<int>(s)}), [&] {
      for (auto& layer : stages[s]->weights()) result.weights.push_back(std::move(layer));
    });
  }
  if (!result.reporter) {
    out.report = run.report(0);
    return out;
  }
  result.losses = losses;
  timelines::TimelineInfo info = timelines::info_of(lowered);
  info.source = std::string(B::kName);
  info.device = run.device_name();
  info.batch_size = o.batch;
  info.tensor_parallel = o.tensor_parallel;
  info.context_parallel = o.model.context_parallel;
  const int median = assemble_timeline(result, parts, lowered, info, run.memory_placement(), o.steps);
  out.report = run.report(median);
  return out;
}

}  // namespace trainer_detail

// Trains `options` on the ranks `where` places in this process. Throws
// InputError for a configuration that cannot run (before any thread starts),
// RunError naming the rank and action when a worker fails or the run stalls;
// every worker thread has stopped when it returns or throws.
template <TrainingBackend B>
[[nodiscard]] Trained<B> train_placed(const TrainOptions& o, const typename B::Options& backend_options,
                                      const Placement& where) {
  check_train_options(o, B::kName, runs_split_backward<B>());
  const schedules::Schedule lowered = lower_checked(o);
  const RunSettings settings = make_run_settings(o, lowered);
  B::require_available();
  return trainer_detail::run_placed<B>(o, settings, backend_options, where);
}

// Throws InputError for data parallelism with every rank in this process:
// replicas run as processes.
inline void check_no_replicas_in_process(const TrainOptions& o) {
  const int processes = o.schedule.num_ranks * o.schedule.data_parallel * o.tensor_parallel;
  if (o.model.context_parallel > 1) {
    throw InputError(fmt::format("--context-parallel {} runs each rank's share of a sequence as a process: launch {} "
                                 "processes under mpirun or srun (--backend cpu)",
                                 o.model.context_parallel, processes));
  }
  if (o.schedule.data_parallel > 1) {
    throw InputError(fmt::format("--data-parallel {} runs each replica's ranks as processes: launch {} processes "
                                 "under mpirun or srun (--backend cpu)",
                                 o.schedule.data_parallel, processes));
  }
  if (o.tensor_parallel > 1) {
    throw InputError(fmt::format("--tensor-parallel {} runs each rank's parts as processes: launch {} processes "
                                 "under mpirun or srun (--backend cpu)",
                                 o.tensor_parallel, processes));
  }
}

// Every rank as a thread of this process.
template <TrainingBackend B>
[[nodiscard]] Trained<B> train_in_process(const TrainOptions& o,
                                          const typename B::Options& backend_options = {}) {
  check_no_replicas_in_process(o);
  Placement where;
  for (int r = 0; r < o.schedule.num_ranks; ++r) where.local.push_back(schedules::Rank{r});
  return train_placed<B>(o, backend_options, where);
}

// Throws InputError when a launch of `world_size` processes (by `launcher`)
// does not fit the schedule: one process per rank of every replica.
inline void check_launch_fits(const TrainOptions& o, int world_size, const std::string& launcher) {
  const int replicas = o.replicas();
  // A stage's processes: its tensor-parallel parts in each of its
  // context-parallel members (plan/cluster.hpp's T x C).
  const int parts = o.tensor_parallel * o.model.context_parallel;
  const int processes = o.schedule.num_ranks * replicas * parts;
  if (processes == world_size) return;
  if (replicas > 1 || parts > 1) {
    throw InputError(fmt::format("the schedule has {} ranks{}{} but {} started {} processes: launch {}",
                                 o.schedule.num_ranks, parts > 1 ? fmt::format(" of {} parts", parts) : "",
                                 replicas > 1 ? fmt::format(" in each of {} replicas", replicas) : "", launcher,
                                 world_size,
                                 parts > 1 ? fmt::format("{} x {} x {} = {}", o.schedule.num_ranks, parts, replicas,
                                                         processes)
                                           : fmt::format("{} x {} = {}", o.schedule.num_ranks, replicas, processes)));
  }
  throw InputError(fmt::format("the schedule has {} ranks but {} started {} processes: launch one process per rank",
                               o.schedule.num_ranks, launcher, world_size));
}

// One rank per process, this one rank `group.rank()` of `group`.
template <TrainingBackend B>
[[nodiscard]] Trained<B> train_in_group(const TrainOptions& o, const typename B::Options& backend_options,
                                        ProcessGroup& group) {
  check_train_options(o, B::kName, runs_split_backward<B>());
  const schedules::Schedule lowered = lower_checked(o);
  RunSettings settings = make_run_settings(o, lowered);
  settings.replica = group.replica();
  settings.part = group.tensor_parallel_rank();
  settings.context_rank = group.context_parallel_rank();
  check_launch_fits(o, group.world_size(), "the launcher");
  B::require_available();
  Placement where;
  where.local = {schedules::Rank{group.rank()}};
  where.group = &group;
  return trainer_detail::run_placed<B>(o, settings, backend_options, where);
}

}  // namespace gpipe::exec
