// The worker of one rank, for every backend: a thread that runs the rank's
// lowered action list in order, step after step.
//
// Data between actions: the output of F(s,m) waits in a slot until F(s+1,m)
// takes it (stage s+1 on the same rank) or SEND_F(s,m) hands it to the link;
// RECV_F(s+1,m) puts what the link brings into the same slot. Gradients go the
// other way (B or I, SEND_B, RECV_B); W reads only what its stage's I left. Slots are keyed by MessageTag, so the local
// and remote paths are one mechanism. A step's data (inputs, targets, the
// loss gradient 1/N) is drawn and handed to the device before the step
// starts, so it is not timed.
//
// What differs between backends is behind `B`, a WorkerBackend
// (training_backend.hpp): its tensors and messages, its stages' actions
// (exec/runtime/stage.hpp, or a test's scripted ones) and the rank's device
// (exec/cpu/cpu_backend.hpp, exec/cuda/backend/rank_device.hpp). On the CPU
// every call runs the work; on a GPU it enqueues it and the host runs ahead,
// the order coming from streams and events.
//
// A worker never throws: an error is recorded in RunControl as "rank R failed
// in ACTION: what" (or "at step S" between actions), which aborts the run; an
// abort makes every wait throw Aborted, upon which the worker just leaves.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/action_mark.hpp"
#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/gradient_reducer.hpp"
#include "exec/runtime/link.hpp"
#include "exec/runtime/memory_log.hpp"
#include "exec/runtime/message_slots.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_settings.hpp"
#include "exec/runtime/step_sync.hpp"
#include "exec/runtime/storage_pool.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/context_parallel.hpp"
#include "exec/runtime/training_backend.hpp"
#include "schedules/schedule.hpp"
#include "schedules/tied_gradient.hpp"

namespace gpipe::exec {

// The run's services a worker uses, shared with the other workers and the
// trainer: the link, the run control, the step barrier, the action timer, the
// memory log and, with replicas, the gradient reducer.
template <WorkerBackend B>
struct WorkerServices {
  Link<typename B::Tensor, typename B::Message>* link = nullptr;
  RunControl* control = nullptr;
  StepSync* sync = nullptr;
  ActionTimer* timer = nullptr;
  MemoryLog* memory = nullptr;
  // Data parallelism: the reduction over the replicas; null without.
  GradientReducer<typename B::Tensor>* reducer = nullptr;
};

template <WorkerBackend B>
class Worker {
 public:
  using Tensor = typename B::Tensor;
  using Message = typename B::Message;
  using Stage = typename B::Stage;
  using Device = typename B::RankDevice;

  // `stages` is indexed by stage: the rank's own stages, nullptr elsewhere.
  Worker(schedules::Rank rank, const RunSettings& settings, std::vector<Stage*> stages,
         Device& device, WorkerServices<B> services)
      : rank_(rank),
        settings_(settings),
        stages_(std::move(stages)),
        device_(device),
        services_(services),
        program_(settings.schedule->actions(rank)),
        task_(*settings.model, settings.seed),
        first_(stages_.front() != nullptr),
        last_(stages_.back() != nullptr) {}

  // The thread's body: every step, then exit. Never throws.
  void run() noexcept {
    const bool completed = run_steps();
    // What the device may still read must not go back to its allocator first;
    // after an abort the link first ends what the device may wait for.
    if (!completed) {
      try {
        services_.link->finish_abort();
      } catch (...) {  // the run has failed already; draining is all that is left
      }
    }
    device_.drain();
    // Tensors this worker still holds go before the thread ends: nothing of a
    // run outlives its workers but what the trainer reads back.
    slots_.clear();
    clear_step_data();
    if (!completed) give_back_memory();
    services_.control->exit_worker(rank_, completed);
  }

 private:
  // Every step in turn; whether all completed. An Aborted ends the loop
  // quietly (another rank or the watchdog has the run's error); any other
  // exception becomes the run's error, naming this rank and where it was.
  [[nodiscard]] bool run_steps() noexcept {
    RunControl& control = *services_.control;
    int step = 0;
    try {
      device_.enter_thread();
      for (; step < settings_.steps; ++step) run_step(step);
      return true;
    } catch (const Aborted&) {
    } catch (const std::bad_alloc&) {
      // Memory is exhausted: nothing on this path may allocate (no message is formatted).
      control.fail_out_of_memory(rank_, current_ >= 0 ? &program_[static_cast<std::size_t>(current_)] : nullptr);
    } catch (const PeerFailed& e) {
      control.fail(e.what());  // the failed process's own line: its rank and action
    } catch (const std::exception& e) {
      control.fail(failure(step, e.what()));
    } catch (...) {
      control.fail(failure(step, "unknown exception"));
    }
    return false;
  }

  // After a failure, and most of all after running out of memory: the
  // stashes go, and the pool's kept blocks go back to the heap. Another rank
  // may be inside an allocation that retries until it succeeds (OpenBLAS up
  // to 0.3.29 takes its GEMM buffer so: OpenMathLib/OpenBLAS#5289); with the
  // memory held until every worker had left, that rank, and the run, would
  // never end.
  void give_back_memory() noexcept {
    for (Stage* stage : stages_) {
      if (stage != nullptr) stage->drop_stashes();
    }
    StoragePool::instance().trim();
  }

  // "rank R failed in ACTION: what" while an action ran, "rank R failed at
  // step S: what" between actions; with replicas, parts or members, "rank R
  // (replica d, part t)" and ", member c", since each of them has a rank R.
  [[nodiscard]] std::string failure(int step, const char* what) const {
    std::string who = fmt::format("rank {}", rank_.value);
    if (settings_.replicas > 1 || settings_.tensor_parallel > 1 || settings_.context_parallel > 1) {
      who += fmt::format(" (replica {}, part {}", settings_.replica, settings_.part);
      if (settings_.context_parallel > 1) who += fmt::format(", member {}", settings_.context_rank);
      who += ")";
    }
    if (current_ >= 0) {
      return fmt::format("{} failed in {}: {}", who, to_string(program_[static_cast<std::size_t>(current_)]), what);
    }
    return fmt::format("{} failed at step {}: {}", who, step, what);
  }

  void run_step(int step) {
    RunControl& control = *services_.control;
    current_ = -1;
    prepare_data(step);
    for (Stage* st : stages_) {
      if (st != nullptr) st->start_step(step, first_samples());
    }
    control.enter_barrier(rank_, step);
    const auto start = services_.sync->arrive(step);
    control.note_progress();
    const int slot = step >= settings_.first_measured_step() ? step - settings_.first_measured_step() : -1;
    if (slot >= 0) {
      services_.timer->start_step(rank_, slot, start);
      services_.memory->start_step(start);
    }
    for (std::size_t i = 0; i < program_.size(); ++i) {
      control.throw_if_aborted();
      current_ = static_cast<int>(i);
      control.enter_action(rank_, step, current_);
      services_.memory->set_action(current_);
      execute({rank_, slot, i, program_[i]}, step);
      if (services_.reducer != nullptr) services_.reducer->progress();
      control.note_progress();
    }
    current_ = -1;
    services_.memory->set_action(-1);
    slots_.expect_empty();
    device_.finish_step(control);
    if (last_) publish_loss(step);
  }

  // The step's data for the stages here that read it: stage 0's inputs, the
  // loss stage's targets and loss gradients (d(mini-batch loss)/d(per-sample
  // loss) = 1/N: the loss is the mean over all N samples; 1/(C N) with
  // context parallelism, each per-sample loss a member's C-th), per micro-batch.
  void prepare_data(int step) {
    clear_step_data();
    if (!first_ && !last_) return;
    // With D replicas the mini-batch is D x N samples, and replica d computes
    // rows [d x N, (d + 1) x N) of it.
    Batch batch = task_.batch(step, settings_.global_batch());
    // With context parallelism, this member's tokens of every sequence.
    if (settings_.context_parallel > 1) {
      const std::vector<std::int64_t> mine = models::context_positions(
          settings_.model->seq, settings_.context_parallel, settings_.context_rank);
      batch.inputs = tokens_at(batch.inputs, mine);
      batch.targets = tokens_at(batch.targets, mine);
    }
    for (std::size_t m = 0; m < settings_.microbatch_sizes.size(); ++m) {
      const std::int64_t offset = settings_.replica * settings_.batch + settings_.microbatch_offsets[m];
      const int b = settings_.microbatch_sizes[m];
      if (first_) inputs_.push_back(device_.upload(batch.inputs.slice_rows(offset, b)));
      if (last_) {
        targets_.push_back(device_.upload(batch.targets.slice_rows(offset, b)));
        exec::Tensor scale({b});
        std::fill(scale.f32().begin(), scale.f32().end(), 1.0F / static_cast<float>(settings_.loss_divisor()));
        loss_gradients_.push_back(device_.upload(std::move(scale)));
      }
    }
    device_.data_ready();
  }

  // The mini-batch row of each micro-batch's first sample (prepare_data's offsets).
  [[nodiscard]] std::vector<std::int64_t> first_samples() const {
    std::vector<std::int64_t> rows;
    for (const std::int64_t offset : settings_.microbatch_offsets) {
      rows.push_back(settings_.replica * settings_.batch + offset);
    }
    return rows;
  }

  void clear_step_data() {
    inputs_.clear();
    targets_.clear();
    loss_gradients_.clear();
    losses_.clear();
  }

  // Summed as the loss of a mini-batch: each micro-batch's per-sample losses
  // in double, then those (and the other replicas' sums), over the batch.
  void publish_loss(int step) {
    double sum = 0;
    for (const Tensor& loss : losses_) sum += device_.sum(loss);
    losses_.clear();
    if (services_.reducer != nullptr) sum = services_.reducer->sum(sum);
    services_.control->publish_loss(step, sum / settings_.loss_divisor());
  }

  void execute(const ActionMark& mark, int step) {
    const schedules::Action& a = mark.action;
    if (settings_.fault && settings_.fault->rank == rank_ && settings_.fault->action == a) {
      if (settings_.fault->kind == FaultInjection::Kind::stall) services_.control->stall(rank_);
      if (settings_.fault->kind == FaultInjection::Kind::out_of_memory) throw std::bad_alloc();
      throw RunError("injected fault");
    }
    const schedules::Stage next{a.stage.value + 1};
    const schedules::Stage prev{a.stage.value - 1};
    const auto rank_of = [&](schedules::Stage s) { return settings_.schedule->rank_of(s); };
    switch (a.kind) {
      case schedules::ActionKind::F:
        forward(mark, step);
        break;
      case schedules::ActionKind::B:
      case schedules::ActionKind::I:
        backward(mark, step);
        break;
      case schedules::ActionKind::W:
        weight_backward(mark);
        break;
      case schedules::ActionKind::R: {
        const TimedScope timed(services_.timer, mark);
        stage(a.stage).recompute(a.microbatch.value, target(a));
        break;
      }
      case schedules::ActionKind::SEND_F:
        send(mark, {step, MessageKind::activation, a.stage, a.microbatch}, rank_of(next));
        break;
      case schedules::ActionKind::RECV_F:
        receive(mark, {step, MessageKind::activation, prev, a.microbatch}, rank_of(prev));
        break;
      case schedules::ActionKind::SEND_B:
        send(mark, {step, MessageKind::gradient, a.stage, a.microbatch}, rank_of(prev));
        break;
      case schedules::ActionKind::RECV_B:
        receive(mark, {step, MessageKind::gradient, next, a.microbatch}, rank_of(next));
        break;
      case schedules::ActionKind::STEP: {
        Tensor& partner = tied_received_[a.stage.at()];
        {
          const TimedScope timed(services_.timer, mark);
          stage(a.stage).step(partner.empty() ? nullptr : &partner);
          // ZeRO 1: this replica updated its share; the step ends when every
          // replica has every share (sim/data_parallel.hpp prices it so).
          if (settings_.zero > 0) services_.reducer->gather(a.stage, stage(a.stage).values());
        }
        partner = Tensor();
        break;
      }
      // A stage may do both: a tied end's exchange, and with replicas the
      // reduction of all its gradients. Its REDUCE_GRAD posts this end's
      // tied gradient before the reduction sums it; its WAIT_REDUCE_GRAD
      // waits for the reduction, then takes the other end's copy and sums
      // that over the replicas too, so that STEP adds two sums.
      case schedules::ActionKind::REDUCE_GRAD: {
        const bool tied = schedules::is_tied_exchange(*settings_.schedule, a);
        if (!tied && services_.reducer == nullptr) unsupported(a);
        const TimedScope timed(services_.timer, mark);
        if (tied) post_tied_gradient(mark, step);
        if (services_.reducer != nullptr) start_reduction(mark);
        break;
      }
      case schedules::ActionKind::WAIT_REDUCE_GRAD: {
        const bool tied = schedules::is_tied_exchange(*settings_.schedule, a);
        if (!tied && services_.reducer == nullptr) unsupported(a);
        if (services_.reducer != nullptr) wait_reduction(mark);
        if (tied) wait_tied_gradient(mark, step);
        // From the arrival (of the sums, of the other end's copy) on: the
        // wait is idle, as a receive's is. With replicas the other end's
        // copy is then summed over them, this action's own work (the
        // simulator prices it as an all-reduce of the matrix).
        const TimedScope timed(services_.timer, mark);
        if (tied && services_.reducer != nullptr) services_.reducer->sum_in_place(tied_received_[a.stage.at()]);
        break;
      }
      case schedules::ActionKind::WAIT_SEND_F:
      case schedules::ActionKind::WAIT_SEND_B:
      case schedules::ActionKind::UNSHARD:
      case schedules::ActionKind::RESHARD:
        unsupported(a);
    }
  }

  // Only torch's schedule files hold these; the executor runs generated schedules.
  [[noreturn]] static void unsupported(const schedules::Action& a) {
    throw std::logic_error(schedules::to_string(a) + " is not supported by the executor yet");
  }

  // A tied embedding's exchange (schedules/tied_gradient.hpp). REDUCE_GRAD(s)
  // posts a copy of the stage's tied gradient to the other end of the
  // pipeline; WAIT_REDUCE_GRAD(s) takes that end's, which STEP(s) adds to its
  // own. Timed (by the caller) as the simulator prices them: REDUCE_GRAD the
  // copy and the post, WAIT_REDUCE_GRAD from the arrival on, so the link is
  // timed for neither.
  void post_tied_gradient(const ActionMark& mark, int step) {
    const schedules::Stage partner = *schedules::tied_partner(*settings_.schedule, mark.action.stage);
    const schedules::Rank to = settings_.schedule->rank_of(partner);
    const MessageTag tag{step, MessageKind::tied_gradient, mark.action.stage, schedules::Microbatch{0}};
    Tensor copy = stage(mark.action.stage).tied_gradient_copy();
    if (to == rank_) {
      slots_.put(tag, device_.local(std::move(copy)));
    } else {
      services_.link->send(rank_, to, tag, std::move(copy), untimed(mark));
    }
  }

  void wait_tied_gradient(const ActionMark& mark, int step) {
    const schedules::Stage partner = *schedules::tied_partner(*settings_.schedule, mark.action.stage);
    const schedules::Rank from = settings_.schedule->rank_of(partner);
    const MessageTag tag{step, MessageKind::tied_gradient, partner, schedules::Microbatch{0}};
    if (from != rank_) slots_.put(tag, services_.link->receive(rank_, from, tag, untimed(mark)));
    tied_received_[mark.action.stage.at()] = take(tag, mark.action);
  }

  // Data parallelism (gradient_reducer.hpp): REDUCE_GRAD(s) starts the sum
  // of the stage's gradients over the replicas, WAIT_REDUCE_GRAD(s) waits for
  // it. Each is timed on the rank (by the caller) as its own work (the
  // start: posting; the wait: from the end on), and the reduction itself on
  // the rank's reduce stream, from the moment its last replica started it to
  // the moment its end was seen, as the simulator's reduce stream shows it.
  void start_reduction(const ActionMark& mark) {
    Stage& st = stage(mark.action.stage);
    services_.reducer->start(mark.action.stage, st.gradients());
    reduction_marks_[mark.action.stage.at()] = mark;
  }

  void wait_reduction(const ActionMark& mark) {
    const auto times = services_.reducer->wait(mark.action.stage);
    const ActionMark& started = reduction_marks_[mark.action.stage.at()];
    if (started.measured() && services_.timer != nullptr) {
      services_.timer->record_reduction(started, times.start, times.end);
    }
  }

  [[nodiscard]] static ActionMark untimed(ActionMark mark) {
    mark.slot = -1;
    return mark;
  }

  void forward(const ActionMark& mark, int step) {
    const schedules::Action& a = mark.action;
    Stage& st = stage(a.stage);
    const auto m = a.microbatch.at();
    Tensor input = a.stage.value == 0
                       ? std::move(inputs_.at(m))
                       : take({step, MessageKind::activation, schedules::Stage{a.stage.value - 1},
                               a.microbatch},
                              a);
    Tensor output;
    {
      const TimedScope timed(services_.timer, mark);
      output = st.forward(a.microbatch.value, std::move(input), target(a));
    }
    if (st.is_last()) {
      if (settings_.check_finite && !device_.all_finite(output)) throw RunError("non-finite loss");
      losses_.push_back(std::move(output));
    } else {
      slots_.put({step, MessageKind::activation, a.stage, a.microbatch}, device_.local(std::move(output)));
    }
    if (settings_.recomputed[a.stage.at()][m]) st.drop_to_boundary(a.microbatch.value);
  }

  // B(s,m) or I(s,m): both consume the gradient of the stage's output and
  // hand on the gradient of its input; I leaves the weight gradients to W.
  void backward(const ActionMark& mark, int step) {
    const schedules::Action& a = mark.action;
    Stage& st = stage(a.stage);
    const auto m = a.microbatch.at();
    Tensor received;
    if (!st.is_last()) {
      received = take({step, MessageKind::gradient, schedules::Stage{a.stage.value + 1}, a.microbatch}, a);
    }
    const Tensor& grad_output = st.is_last() ? loss_gradients_.at(m) : received;
    Tensor grad_input;
    {
      const TimedScope timed(services_.timer, mark);
      grad_input = a.kind == schedules::ActionKind::I ? st.input_backward(a.microbatch.value, grad_output)
                                                      : st.backward(a.microbatch.value, grad_output);
    }
    if (settings_.check_finite) {
      if (auto name = st.non_finite_gradient()) throw RunError("non-finite gradient of " + *name);
      if (!grad_input.empty() && !device_.all_finite(grad_input)) {
        throw RunError("non-finite input gradient");
      }
    }
    // Stage 0's input gradient has no consumer.
    if (a.stage.value > 0) {
      slots_.put({step, MessageKind::gradient, a.stage, a.microbatch}, device_.local(std::move(grad_input)));
    }
  }

  void weight_backward(const ActionMark& mark) {
    Stage& st = stage(mark.action.stage);
    {
      const TimedScope timed(services_.timer, mark);
      st.weight_backward(mark.action.microbatch.value);
    }
    if (settings_.check_finite) {
      if (auto name = st.non_finite_gradient()) throw RunError("non-finite gradient of " + *name);
    }
  }

  // SEND: what this rank produced under `tag` goes to rank `to`.
  void send(const ActionMark& mark, const MessageTag& tag, schedules::Rank to) {
    services_.link->send(rank_, to, tag, take(tag, mark.action), mark);
  }

  // RECV: the message `tag` from rank `from`, into its slot until its consumer takes it.
  void receive(const ActionMark& mark, const MessageTag& tag, schedules::Rank from) {
    slots_.put(tag, services_.link->receive(rank_, from, tag, mark));
  }

  // The tensor of `tag`, usable by the compute that follows.
  [[nodiscard]] Tensor take(const MessageTag& tag, const schedules::Action& action) {
    return device_.ready(slots_.take(tag, action));
  }

  [[nodiscard]] const Tensor* target(const schedules::Action& a) {
    if (!stage(a.stage).is_last()) return nullptr;
    return &targets_.at(a.microbatch.at());
  }

  [[nodiscard]] Stage& stage(schedules::Stage s) const {
    Stage* st = s.value >= 0 && s.at() < stages_.size() ? stages_[s.at()] : nullptr;
    if (st == nullptr) {
      throw std::logic_error(fmt::format("stage {} does not live on rank {}", s.value, rank_.value));
    }
    return *st;
  }

  schedules::Rank rank_;
  const RunSettings& settings_;
  std::vector<Stage*> stages_;
  Device& device_;
  WorkerServices<B> services_;
  const std::vector<schedules::Action>& program_;
  SyntheticTask task_;
  bool first_ = false;  // holds stage 0, which reads the inputs
  bool last_ = false;   // holds the loss stage, which reads the targets

  // Per step.
  std::vector<Tensor> inputs_;          // per micro-batch, stage 0
  std::vector<Tensor> targets_;         // per micro-batch, the loss stage
  std::vector<Tensor> loss_gradients_;  // per micro-batch, the loss stage: 1/N each
  std::vector<Tensor> losses_;          // per micro-batch, the loss stage: f32 [b]
  // Per stage: the other end's tied embedding gradient, from WAIT_REDUCE_GRAD to STEP.
  std::vector<Tensor> tied_received_ = std::vector<Tensor>(settings_.schedule->num_stages);
  // Per stage: the REDUCE_GRAD that started its data-parallel reduction.
  std::vector<ActionMark> reduction_marks_ = std::vector<ActionMark>(settings_.schedule->num_stages);
  MessageSlots<Message> slots_;
  int current_ = -1;  // index of the running action, -1 between actions
};

}  // namespace gpipe::exec
