#include "exec/cuda/backend/cuda_worker.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "exec/runtime/worker_steps.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::cuda {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;
using schedules::Stage;

MessageSpec boundary_spec(const models::Model& model, std::int64_t b) {
  if (model.seq > 0) return {{b, model.seq, model.hidden}, DeviceType::f32};
  return {{b, model.hidden}, DeviceType::f32};
}

CudaWorker::CudaWorker(Rank rank, const RunPlan& plan, std::vector<DeviceStage*> stages,
                       RankDevice& device, CudaWorkerLinks links)
    : rank_(rank),
      plan_(plan),
      stages_(std::move(stages)),
      device_(device),
      links_(links),
      program_(plan.schedule->actions(rank)),
      task_(*plan.model, plan.seed) {
  first_ = stages_.front() != nullptr;
  last_ = stages_.back() != nullptr;
}

void CudaWorker::run() noexcept {
  RunControl& control = *links_.control;
  const bool completed = run_worker_steps(control, rank_, program_, current_, plan_.steps, [this](int step) {
    if (step == 0) {
      use_device(device_.device);
      if (device_.bind_thread) device_.bind_thread();  // into the rank's green context
    }
    run_step(step);
  });
  // What the GPU may still read must not go back to the cache before it is
  // done; after an abort, the link first ends what the GPU may wait for.
  try {
    if (!completed) links_.link->finish_abort();
    device_.compute.synchronize();
    device_.from_previous.synchronize();
    device_.from_next.synchronize();
  } catch (...) {  // the device failed: the run has failed already, and freeing is all that is left
  }
  slots_.clear();
  inputs_.clear();
  targets_.clear();
  loss_grads_.clear();
  losses_.clear();
  control.exit_worker(rank_, completed);
}

void CudaWorker::upload_step_data(int step) {
  inputs_.clear();
  targets_.clear();
  loss_grads_.clear();
  losses_.clear();
  if (!first_ && !last_) return;
  const Batch batch = task_.batch(step, plan_.batch);
  const Stream& stream = device_.compute;
  const auto as_device = [](const Tensor& t) {
    return t.type() == ElementType::i32 ? DeviceType::i32 : DeviceType::f32;
  };
  for (std::size_t m = 0; m < plan_.microbatch_sizes.size(); ++m) {
    const std::int64_t offset = plan_.microbatch_offsets[m];
    const int b = plan_.microbatch_sizes[m];
    if (first_) {
      const Tensor rows = batch.inputs.slice_rows(offset, b);
      inputs_.push_back(DeviceTensor::from_host(device_.allocator, rows, as_device(rows), stream));
    }
    if (last_) {
      const Tensor rows = batch.targets.slice_rows(offset, b);
      targets_.push_back(DeviceTensor::from_host(device_.allocator, rows, as_device(rows), stream));
      // d(mini-batch loss)/d(per-sample loss): the loss is the mean over all N samples.
      Tensor ones({b});
      std::fill(ones.f32().begin(), ones.f32().end(), 1.0F / static_cast<float>(plan_.batch));
      loss_grads_.push_back(DeviceTensor::from_host(device_.allocator, ones, DeviceType::f32, stream));
    }
  }
  stream.synchronize();  // the upload is not part of the step
}

void CudaWorker::run_step(int step) {
  RunControl& control = *links_.control;
  current_ = -1;
  upload_step_data(step);
  control.enter_barrier(rank_, step);
  links_.barrier(step);
  control.note_progress();
  const int first_measured = plan_.steps - plan_.measured_steps;
  const int slot = step >= first_measured ? step - first_measured : -1;
  if (slot >= 0) {
    links_.timer->start_step(rank_.value, slot, device_.compute.get());
    links_.memory->start_step();
  }
  for (std::size_t i = 0; i < program_.size(); ++i) {
    control.throw_if_aborted();
    current_ = static_cast<int>(i);
    control.enter_action(rank_, step, current_);
    links_.memory->set_action(current_);
    execute(program_[i], i, step, slot);
    control.note_progress();
  }
  current_ = -1;
  links_.memory->set_action(-1);
  slots_.expect_empty();
  finish_step(step);
}

void CudaWorker::finish_step(int step) {
  wait_for_gpu();
  if (!last_) return;
  // Summed as the CPU worker sums: each micro-batch in double, then those.
  double sum = 0;
  for (const DeviceTensor& loss : losses_) {
    std::vector<float> values(static_cast<std::size_t>(loss.numel()));
    loss.download(values, device_.compute);
    double microbatch = 0;
    for (float v : values) microbatch += v;
    sum += microbatch;
  }
  losses_.clear();
  links_.control->publish_loss(step, sum / static_cast<double>(plan_.batch));
}

void CudaWorker::wait_for_gpu() {
  if (!links_.link->sends_on_gpu()) {
    // In one process every GPU wait is on an event already recorded: the
    // streams always drain, and a blocking wait adds no polling calls (each
    // of which CUPTI would record).
    for (const Stream* s : {&device_.compute, &device_.from_previous, &device_.from_next}) s->synchronize();
    links_.control->note_progress();
    return;
  }
  // Over NCCL, polled: a rank whose peer failed would otherwise wait forever
  // on a receive that never comes; an abort ends the wait.
  std::vector<Event> done;
  for (const Stream* s : {&device_.compute, &device_.from_previous, &device_.from_next}) {
    done.emplace_back(false).record(*s);
  }
  for (const Event& e : done) {
    while (!e.done()) {
      links_.control->throw_if_aborted();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  links_.control->note_progress();
}

void CudaWorker::execute(const Action& a, std::size_t index, int step, int slot) {
  if (plan_.fault && plan_.fault->rank == rank_ && plan_.fault->action == a) {
    if (plan_.fault->kind == FaultInjection::Kind::stall) links_.control->stall(rank_);
    throw RunError("injected fault");
  }
  ActionTimer* timer = slot >= 0 ? links_.timer : nullptr;
  const Stage next{a.stage.value + 1};
  const Stage prev{a.stage.value - 1};
  const auto receive = [&](const MessageTag& tag, Rank from) {
    const TransferTiming timing = transfer_timing(timer, a, index, slot);
    const MessageSpec spec = boundary_spec(*plan_.model, plan_.microbatch_sizes[a.microbatch.at()]);
    put(tag, links_.link->receive(rank_, from, tag, spec, device_, timing));
  };
  switch (a.kind) {
    case ActionKind::F:
      forward(a, index, step, slot);
      break;
    case ActionKind::B:
      backward(a, index, step, slot);
      break;
    case ActionKind::R: {
      TimedScope timed(timer, rank_.value, slot, index, a, device_.compute.get());
      stage(a.stage).recompute(a.microbatch.value, target(a));
      break;
    }
    case ActionKind::SEND_F: {
      const MessageTag tag{step, MessageKind::activation, a.stage, a.microbatch};
      send(tag, plan_.schedule->rank_of(next), a, index, slot);
      break;
    }
    case ActionKind::RECV_F:
      receive({step, MessageKind::activation, prev, a.microbatch}, plan_.schedule->rank_of(prev));
      break;
    case ActionKind::SEND_B: {
      const MessageTag tag{step, MessageKind::gradient, a.stage, a.microbatch};
      send(tag, plan_.schedule->rank_of(prev), a, index, slot);
      break;
    }
    case ActionKind::RECV_B:
      receive({step, MessageKind::gradient, next, a.microbatch}, plan_.schedule->rank_of(next));
      break;
    case ActionKind::STEP: {
      TimedScope timed(timer, rank_.value, slot, index, a, device_.compute.get());
      stage(a.stage).step();
      break;
    }
    case ActionKind::I:
    case ActionKind::W:
      throw std::logic_error("the cuda executor runs no split backward");  // rejected by train
  }
}

void CudaWorker::forward(const Action& a, std::size_t index, int step, int slot) {
  DeviceStage& st = stage(a.stage);
  const auto m = a.microbatch.at();
  DeviceTensor input =
      a.stage.value == 0
          ? std::move(inputs_.at(m))
          : take({step, MessageKind::activation, Stage{a.stage.value - 1}, a.microbatch}, a);
  DeviceTensor output;
  {
    TimedScope timed(slot >= 0 ? links_.timer : nullptr, rank_.value, slot, index, a,
                     device_.compute.get());
    output = st.forward(a.microbatch.value, std::move(input), target(a));
  }
  if (st.is_last()) {
    if (plan_.check_finite) {
      std::vector<float> values(static_cast<std::size_t>(output.numel()));
      output.download(values, device_.compute);
      for (float v : values) {
        if (!std::isfinite(v)) throw RunError("non-finite loss");
      }
    }
    losses_.push_back(std::move(output));
  } else {
    put({step, MessageKind::activation, a.stage, a.microbatch}, Arrival{std::move(output), nullptr});
  }
  if (plan_.recomputed[a.stage.at()][m]) st.drop_to_boundary(a.microbatch.value);
}

void CudaWorker::backward(const Action& a, std::size_t index, int step, int slot) {
  DeviceStage& st = stage(a.stage);
  const auto m = a.microbatch.at();
  DeviceTensor received;
  if (!st.is_last()) {
    received = take({step, MessageKind::gradient, Stage{a.stage.value + 1}, a.microbatch}, a);
  }
  const DeviceTensor& grad_output = st.is_last() ? loss_grads_.at(m) : received;
  DeviceTensor grad_input;
  {
    TimedScope timed(slot >= 0 ? links_.timer : nullptr, rank_.value, slot, index, a,
                     device_.compute.get());
    grad_input = st.backward(a.microbatch.value, grad_output);
  }
  if (plan_.check_finite) {
    if (auto name = st.non_finite_gradient(); !name.empty())
      throw RunError("non-finite gradient of " + name);
    if (!grad_input.empty() && grad_input.type() == DeviceType::f32) {
      std::vector<float> values(static_cast<std::size_t>(grad_input.numel()));
      grad_input.download(values, device_.compute);
      for (float v : values) {
        if (!std::isfinite(v)) throw RunError("non-finite input gradient");
      }
    }
  }
  // Stage 0's input gradient has no consumer.
  if (a.stage.value > 0)
    put({step, MessageKind::gradient, a.stage, a.microbatch}, Arrival{std::move(grad_input), nullptr});
}

void CudaWorker::send(const MessageTag& tag, Rank to, const Action& a, std::size_t index, int slot) {
  DeviceTensor tensor = take(tag, a);
  // A send is timed only where it has GPU work of its own (NCCL's kernel);
  // in one process the receiver's copy is the message's time.
  ActionTimer* timer = slot >= 0 && links_.link->sends_on_gpu() ? links_.timer : nullptr;
  links_.link->send(rank_, to, tag, std::move(tensor), device_, transfer_timing(timer, a, index, slot));
}

TransferTiming CudaWorker::transfer_timing(ActionTimer* timer, const Action& a, std::size_t index,
                                           int slot) const {
  TransferTiming timing;
  if (timer != nullptr) {
    const int rank = rank_.value;
    timing.begin = [=](StreamHandle s) { timer->begin(rank, slot, index, a, s); };
    timing.end = [=](StreamHandle s) { timer->end(rank, slot, index, a, s); };
  }
  return timing;
}

const DeviceTensor* CudaWorker::target(const Action& a) const {
  if (!stage(a.stage).is_last()) return nullptr;
  return &targets_.at(a.microbatch.at());
}

DeviceStage& CudaWorker::stage(Stage s) const {
  DeviceStage* st = s.value >= 0 && s.at() < stages_.size() ? stages_[s.at()] : nullptr;
  if (st == nullptr) {
    throw std::logic_error(fmt::format("stage {} does not live on rank {}", s.value, rank_.value));
  }
  return *st;
}

void CudaWorker::put(const MessageTag& tag, Arrival arrival) { slots_.put(tag, std::move(arrival)); }

DeviceTensor CudaWorker::take(const MessageTag& tag, const Action& a) {
  Arrival arrival = slots_.take(tag, a);
  if (arrival.ready) {
    // Received on a link's stream: the compute stream reads it after the copy,
    // and its block goes back to the cache only after the compute stream's use.
    device_.compute.wait(*arrival.ready);
    arrival.tensor.record_use(device_.compute);
  }
  return std::move(arrival.tensor);
}

}  // namespace gpipe::exec::cuda
