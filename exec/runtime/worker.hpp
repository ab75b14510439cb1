// The worker of one rank: a thread that runs the rank's lowered action list
// in order, step after step, and measures when each action starts and ends.
//
// Data between actions: the output of F(s,m) waits in a local slot until
// F(s+1,m) takes it (stage s+1 on the same rank) or SEND_F(s,m) puts it on
// the transport; RECV_F(s+1,m) takes it off into the same slot. Gradients go
// the other way (B, SEND_B, RECV_B). Slots are keyed by MessageTag, so the
// local and remote paths are one mechanism.
//
// A worker never throws: an error is recorded in RunControl as "rank R failed
// in ACTION: what", which aborts the run; an abort makes every wait throw
// Aborted, upon which the worker just leaves.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "exec/runtime/synthetic_data.hpp"
#include "exec/runtime/fault.hpp"
#include "exec/runtime/memory_recorder.hpp"
#include "exec/runtime/message_slots.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/stage_state.hpp"
#include "exec/runtime/step_barrier.hpp"
#include "exec/runtime/transport.hpp"
#include "models/model.hpp"
#include "schedules/schedule.hpp"
#include "schedules/timeline.hpp"

namespace gpipe::exec {

// What every worker of a run reads; set up before the threads start, then constant.
struct RunPlan {
  const models::Model* model = nullptr;
  const schedules::Schedule* schedule = nullptr;  // lowered
  std::int64_t batch = 0;                         // N
  std::vector<int> microbatch_sizes;              // split_batch(N, M)
  std::vector<std::int64_t> microbatch_offsets;   // first row of each micro-batch
  std::vector<std::vector<bool>> recomputed;      // [stage][m]: the schedule has R(s,m)
  int steps = 1;
  int measured_steps = 1;  // the last this many steps are recorded
  std::uint64_t seed = 0;
  bool check_finite = false;
  std::optional<FaultInjection> fault;
};

// What a worker shares with the others and the main thread.
struct WorkerLinks {
  Transport* transport = nullptr;
  RunControl* control = nullptr;
  StepBarrier* barrier = nullptr;
  MemoryRecorder* memory = nullptr;
};

class Worker {
 public:
  using Clock = std::chrono::steady_clock;

  // `stages` is indexed by stage: the rank's own stages, nullptr elsewhere.
  Worker(schedules::Rank rank, const RunPlan& plan, std::vector<StageState*> stages,
         WorkerLinks links);

  // The thread's body: every step, then exit. Never throws.
  void run() noexcept;

  // The last step's actions as they ran, in program order; read after join.
  // The recorded steps' actions, one list per recorded step, oldest first.
  [[nodiscard]] const std::vector<std::vector<schedules::TimedAction>>& timelines() const {
    return timelines_;
  }

 private:
  void run_step(int step);
  void execute(const schedules::Action& action, int step);
  void forward(const schedules::Action& action, int step);
  void backward(const schedules::Action& action, int step);
  [[nodiscard]] Tensor target_rows(const schedules::Action& action) const;
  [[nodiscard]] StageState& stage(schedules::Stage s) const;
  [[nodiscard]] std::int64_t since_start() const;

  schedules::Rank rank_;
  const RunPlan& plan_;
  std::vector<StageState*> stages_;
  WorkerLinks links_;
  const std::vector<schedules::Action>& program_;
  SyntheticTask task_;
  bool needs_data_ = false;  // the rank holds the first or the last stage

  // Per step.
  Batch batch_;
  MessageSlots<Tensor> slots_;
  double loss_sum_ = 0;
  Clock::time_point step_start_;
  int current_ = -1;  // index of the running action, -1 between actions

  std::vector<std::vector<schedules::TimedAction>> timelines_;
};

}  // namespace gpipe::exec
