#include "exec/runtime/worker.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "exec/runtime/worker_steps.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;
using schedules::Stage;

Worker::Worker(Rank rank, const RunPlan& plan, std::vector<StageState*> stages, WorkerLinks links)
    : rank_(rank),
      plan_(plan),
      stages_(std::move(stages)),
      links_(links),
      program_(plan.schedule->actions(rank)),
      task_(*plan.model, plan.seed) {
  const int last = plan.schedule->num_stages - 1;
  needs_data_ = stages_.front() != nullptr || stages_.at(static_cast<std::size_t>(last)) != nullptr;
}

void Worker::run() noexcept {
  RunControl& control = *links_.control;
  const bool completed = run_worker_steps(control, rank_, program_, current_, plan_.steps,
                                          [this](int step) { run_step(step); });
  // Tensors this worker still holds go before the thread ends: nothing of a
  // run outlives its workers but what train() reads back.
  slots_.clear();
  batch_ = {};
  control.exit_worker(rank_, completed);
}

std::int64_t Worker::since_start() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - step_start_).count();
}

void Worker::run_step(int step) {
  RunControl& control = *links_.control;
  current_ = -1;
  // The data is drawn before the step starts, so that it is not timed.
  if (needs_data_) batch_ = task_.batch(step, plan_.batch);
  loss_sum_ = 0;
  control.enter_barrier(rank_, step);
  step_start_ = links_.barrier->arrive_and_wait();
  control.note_progress();
  const bool record = step >= plan_.steps - plan_.measured_steps;
  if (record) {
    links_.memory->start(step_start_);
    timelines_.emplace_back().reserve(program_.size());
  }

  std::int64_t previous_start = -1;
  for (std::size_t i = 0; i < program_.size(); ++i) {
    control.throw_if_aborted();
    const Action& action = program_[i];
    current_ = static_cast<int>(i);
    control.enter_action(rank_, step, current_);
    // Each action starts strictly after the one before it on the rank (a
    // nanosecond is added on a tie of the clock), so that sorting the trace
    // by start gives back the program order.
    const std::int64_t start = std::max(since_start(), previous_start + 1);
    execute(action, step);
    const std::int64_t end = std::max(since_start(), start);
    previous_start = start;
    control.note_progress();
    if (record) timelines_.back().push_back({action, rank_, schedules::stream_of(action.kind), start, end});
  }
  current_ = -1;
  slots_.expect_empty();
  if (stages_.back() != nullptr) {
    control.publish_loss(step, loss_sum_ / static_cast<double>(plan_.batch));
  }
}

void Worker::execute(const Action& a, int step) {
  if (plan_.fault && plan_.fault->rank == rank_ && plan_.fault->action == a) {
    if (plan_.fault->kind == FaultInjection::Kind::stall) links_.control->stall(rank_);
    throw RunError("injected fault");
  }
  const Stage next{a.stage.value + 1};
  const Stage prev{a.stage.value - 1};
  switch (a.kind) {
    case ActionKind::F:
      forward(a, step);
      break;
    case ActionKind::B:
      backward(a, step);
      break;
    case ActionKind::R: {
      const Tensor target = target_rows(a);
      stage(a.stage).recompute(a.microbatch.value, target.empty() ? nullptr : &target);
      break;
    }
    case ActionKind::SEND_F: {
      const MessageTag tag{step, MessageKind::activation, a.stage, a.microbatch};
      links_.transport->send(rank_, plan_.schedule->rank_of(next), tag, slots_.take(tag, a));
      break;
    }
    case ActionKind::RECV_F: {
      const MessageTag tag{step, MessageKind::activation, prev, a.microbatch};
      slots_.put(tag, links_.transport->receive(rank_, plan_.schedule->rank_of(prev), tag));
      break;
    }
    case ActionKind::SEND_B: {
      const MessageTag tag{step, MessageKind::gradient, a.stage, a.microbatch};
      links_.transport->send(rank_, plan_.schedule->rank_of(prev), tag, slots_.take(tag, a));
      break;
    }
    case ActionKind::RECV_B: {
      const MessageTag tag{step, MessageKind::gradient, next, a.microbatch};
      slots_.put(tag, links_.transport->receive(rank_, plan_.schedule->rank_of(next), tag));
      break;
    }
    case ActionKind::STEP:
      stage(a.stage).step();
      break;
    case ActionKind::I:
    case ActionKind::W:
      throw std::logic_error("the cpu executor runs no split backward");  // rejected by train()
  }
}

void Worker::forward(const Action& a, int step) {
  StageState& st = stage(a.stage);
  const auto m = a.microbatch.at();
  Tensor input =
      a.stage.value == 0
          ? batch_.inputs.slice_rows(plan_.microbatch_offsets[m], plan_.microbatch_sizes[m])
          
          : slots_.take({step, MessageKind::activation, Stage{a.stage.value - 1}, a.microbatch}, a);
  const Tensor target = target_rows(a);
  Tensor output =
      st.forward(a.microbatch.value, std::move(input), target.empty() ? nullptr : &target);
  if (st.is_last()) {
    double sum = 0;
    for (float loss : output.f32()) sum += loss;
    if (plan_.check_finite && !std::isfinite(sum)) throw RunError("non-finite loss");
    loss_sum_ += sum;
  } else {
    slots_.put({step, MessageKind::activation, a.stage, a.microbatch}, std::move(output));
  }
  const auto& recomputed = plan_.recomputed[a.stage.at()];
  if (recomputed[m]) st.drop_to_boundary(a.microbatch.value);
}

void Worker::backward(const Action& a, int step) {
  StageState& st = stage(a.stage);
  const auto m = a.microbatch.at();
  Tensor grad_output;
  if (st.is_last()) {
    // d(mini-batch loss)/d(per-sample loss): the loss is the mean over all N samples.
    grad_output = Tensor({plan_.microbatch_sizes[m]});
    std::fill(grad_output.f32().begin(), grad_output.f32().end(),
              1.0F / static_cast<float>(plan_.batch));
  } else {
    grad_output = slots_.take({step, MessageKind::gradient, Stage{a.stage.value + 1}, a.microbatch}, a);
  }
  Tensor grad_input = st.backward(a.microbatch.value, grad_output);
  if (plan_.check_finite) {
    if (auto name = st.non_finite_gradient()) throw RunError("non-finite gradient of " + *name);
    if (!grad_input.empty() && !all_finite(grad_input)) throw RunError("non-finite input gradient");
  }
  // Stage 0's input gradient has no consumer.
  if (a.stage.value > 0)
    slots_.put({step, MessageKind::gradient, a.stage, a.microbatch}, std::move(grad_input));
}

Tensor Worker::target_rows(const Action& a) const {
  if (!stage(a.stage).is_last()) return {};
  const auto m = a.microbatch.at();
  return batch_.targets.slice_rows(plan_.microbatch_offsets[m], plan_.microbatch_sizes[m]);
}

StageState& Worker::stage(Stage s) const {
  StageState* st = s.value >= 0 && s.at() < stages_.size() ? stages_[s.at()] : nullptr;
  if (st == nullptr) {
    throw std::logic_error(fmt::format("stage {} does not live on rank {}", s.value, rank_.value));
  }
  return *st;
}

}  // namespace gpipe::exec
