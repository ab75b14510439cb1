// What a backend supplies to the shared runtime to train, as C++20 concepts:
// the contract that the worker (worker.hpp), the stage (stage.hpp) and the
// trainer (trainer.hpp) are instantiated with, written once, so that a
// backend that lacks a part is refused where it is named, with the part's
// name, instead of deep inside a template. The backends:
// exec/cpu/cpu_backend.hpp and exec/cuda/backend/cuda_backend.hpp; the tests'
// scripted worker backend: tests/exec/fake_backend.hpp.
//
// The contract comes in layers, each the part one piece of the runtime uses:
// - WorkerBackend: what a rank's worker drives (the stages' actions, the
//   rank's device); a test may script these alone;
// - StageBackend: the math exec::Stage is made of (layers, optimizers, the
//   tensors' few whole-tensor operations);
// - TrainingBackend: both, and what the trainer needs besides (a name, the
//   backend's options, its resources for a run, its report).
// The optional parts are concepts of their own, read with `if constexpr`
// where the runtime offers what they enable: a split backward
// (SplitBackwardBackend), ZeRO's sharded optimizer state
// (ShardedOptimizerBackend), a reduction over replicas
// (GradientReducingBackend).
//
// On a device every call enqueues its work on a stream and returns without
// waiting, except those said to read values back; on the CPU every call runs
// the work. The order comes from the streams and the events the backend
// records.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/layers/layer.hpp"
#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/gradient_reducer.hpp"
#include "exec/runtime/link.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/placement.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_settings.hpp"
#include "exec/runtime/step_timeline.hpp"
#include "exec/runtime/tensor.hpp"
#include "exec/runtime/train_options.hpp"
#include "exec/runtime/zero_shards.hpp"
#include "models/model.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

template <class B>
class Stage;  // stage.hpp: the runtime's stage, a training backend's B::Stage

// What a worker holds of a stage's tensors: made empty (a stage 0 input
// gradient, a missing tied partner), moved between slots, asked whether it
// holds anything.
template <class T>
concept WorkerTensor = std::default_initializable<T> && std::movable<T> && requires(const T& tensor) {
  { tensor.empty() } -> std::convertible_to<bool>;
};

// A stage as a rank's worker runs it (exec::Stage is the runtime's; a test may
// script its own): one call per action of the schedule, for micro-batch `m`.
template <class S, class T>
concept WorkerStage = requires(S& stage, int m, T input, const T& grad_output, const T* target, const T* partner) {
  // Whether the stage ends with the model's loss layer (and so reads targets).
  { stage.is_last() } -> std::convertible_to<bool>;
  // Before a step's actions: the step and each micro-batch's first sample row (dropout's masks).
  stage.start_step(m, std::vector<std::int64_t>{});
  // F: the output (the per-sample loss on the last stage), keeping the stashes.
  { stage.forward(m, std::move(input), target) } -> std::convertible_to<T>;
  // After F of a micro-batch R recomputes: frees every stash but the input.
  stage.drop_to_boundary(m);
  // R: the forward again from the kept input.
  stage.recompute(m, target);
  // B, and I with a split backward: the gradient of the stage's input (empty for token ids).
  { stage.backward(m, grad_output) } -> std::convertible_to<T>;
  { stage.input_backward(m, grad_output) } -> std::convertible_to<T>;
  // W: the rest of the weight gradients, from what I left.
  stage.weight_backward(m);
  // REDUCE_GRAD of a tied embedding: a copy of the tied matrix's gradient.
  { stage.tied_gradient_copy() } -> std::convertible_to<T>;
  // STEP, with the other tied end's gradient or null.
  stage.step(partner);
  // --check-finite: the first parameter whose gradient is not finite (reads back).
  { stage.non_finite_gradient() } -> std::convertible_to<std::optional<std::string>>;
  // With replicas: what the reduction sums, and under ZeRO 1 what STEP gathers.
  { stage.gradients() } -> std::convertible_to<std::vector<T*>>;
  { stage.values() } -> std::convertible_to<std::vector<T*>>;
  // After a failed run: frees the stashes, on the way out of a worker that never throws.
  { stage.drop_stashes() } noexcept;
};

// What a rank computes on (B::RankDevice), as its worker uses it, with the
// stages' tensors `T` and what a receive yields, `M`.
template <class D, class T, class M>
concept WorkerDevice = requires(D& device, exec::Tensor host, T tensor, const T& held, M message, RunControl& control) {
  // On the worker's thread, before anything else (a compute team, a device made current).
  device.enter_thread();
  // A step's data (inputs, targets, loss gradients), before the step starts.
  { device.upload(std::move(host)) } -> std::convertible_to<T>;
  // Once the step's data is uploaded.
  device.data_ready();
  // A received message, made usable by the compute that consumes it.
  { device.ready(std::move(message)) } -> std::convertible_to<T>;
  // A tensor produced here, into a slot (for a stage on the same rank, or a send).
  { device.local(std::move(tensor)) } -> std::convertible_to<M>;
  // Read back: --check-finite, and the loss.
  { device.all_finite(held) } -> std::convertible_to<bool>;
  { device.sum(held) } -> std::convertible_to<double>;
  // Waits for the step's device work; an abort ends the wait.
  device.finish_step(control);
  // Waits for what the device may still read, on the way out of a worker that never throws.
  { device.drain() } noexcept;
};

// What a rank's worker (worker.hpp) is instantiated with.
template <class B>
concept WorkerBackend = requires {
  typename B::Tensor;      // what stages compute with and links send
  typename B::Message;     // what a receive yields (B::Tensor where a received tensor is usable at once)
  typename B::Stage;       // a stage's actions: WorkerStage
  typename B::RankDevice;  // what a rank computes on: WorkerDevice
} && WorkerTensor<typename B::Tensor> && std::movable<typename B::Message> &&
                        WorkerStage<typename B::Stage, typename B::Tensor> &&
                        WorkerDevice<typename B::RankDevice, typename B::Tensor, typename B::Message>;

// The math a stage (stage.hpp) is made of, each call given the stage's
// B::Context: where its work goes (nothing on the CPU but a tensor-parallel
// group; a GPU's stream, allocator and cuBLASLt handle).
template <class B>
concept StageBackend =
    requires {
      { B::kName } -> std::convertible_to<std::string_view>;  // "cpu", "cuda": in error messages and the timeline
      typename B::Tensor;
      typename B::Context;
      typename B::Optimizer;  // a layer's optimizer state
    } && std::move_constructible<typename B::Context> && std::movable<typename B::Optimizer> &&
    requires(const models::Model& model, int index, std::uint64_t seed, const typename B::Context& context,
             const OptimizerConfig& config, std::vector<Parameter<typename B::Tensor>>& parameters,
             typename B::Optimizer& optimizer, const typename B::Optimizer& held_optimizer,
             typename B::Tensor& dst, const typename B::Tensor& tensor) {
      // Layer `index` of `model`, its weights from the seed (the same whatever the partition).
      { B::make_layer(model, index, seed, context) } -> std::convertible_to<std::unique_ptr<Layer<typename B::Tensor>>>;
      // A layer's optimizer state for its parameters; step() applies and zeroes their gradients.
      { B::make_optimizer(config, parameters, context) } -> std::convertible_to<typename B::Optimizer>;
      optimizer.step(parameters);
      { held_optimizer.bytes() } -> std::convertible_to<std::int64_t>;
      // Whether every value is finite (reads back).
      { B::all_finite(tensor, context) } -> std::convertible_to<bool>;
      // Its f32 values on the host (reads back).
      { B::to_host(tensor, context) } -> std::convertible_to<std::vector<float>>;
      // A tied embedding's gradients: a copy charged to none, and dst += src.
      { B::copy_of(tensor, context) } -> std::convertible_to<typename B::Tensor>;
      B::add_into(dst, tensor, context);
      // Parameters, gradients and optimizer state held count in a stage's static bytes.
      { tensor.bytes() } -> std::convertible_to<std::int64_t>;
    };

// A backend's resources for one run in this process (B::Run), made for the
// ranks `where` places here, before the stages.
template <class R, class B>
concept TrainingRun =
    std::constructible_from<R, const TrainOptions&, const RunSettings&, const Placement&, const typename B::Options&> &&
    requires(R& run, schedules::Rank rank, std::function<void()> f, int median_slot) {
      // For each rank placed here: what it computes on, and its stages' context.
      { run.device(rank) } -> std::same_as<typename B::RankDevice&>;
      { run.context(rank) } -> std::convertible_to<typename B::Context>;
      // Calls f with the rank's device current (its SM partition's context).
      run.in_context(rank, f);
      // The run's link and action timer, shared by its workers.
      { run.link() } -> std::convertible_to<Link<typename B::Tensor, typename B::Message>&>;
      { run.timer() } -> std::convertible_to<ActionTimer&>;
      // Where memory changes land on the timeline (step_timeline.hpp).
      { run.memory_placement() } -> std::convertible_to<MemoryPlacement>;
      // Once the stages are built (a device's timing starts).
      run.weights_ready();
      // After the workers: the device drained, the timing collected.
      run.finish();
      // Instead, after a failed run.
      { run.abandon() } noexcept;
      // For the timeline.
      { run.device_name() } -> std::convertible_to<std::string>;
      // The B::Report, for the measured step of median time.
      { run.report(median_slot) } -> std::convertible_to<typename B::Report>;
    };

// What the trainer (trainer.hpp) is instantiated with: a worker's backend
// whose stages are the runtime's own, with the math they are made of, and
//   B::Options               its own settings (the CUDA device, SM partitions, timing)
//   B::Report                what only this backend has to say of a run
//   B::require_available()   RunError when this machine cannot run it ("no CUDA device")
//   B::Run                   its resources for one run in this process: TrainingRun
// StageBackend comes first: a type without the math is refused before its
// stages are looked into.
template <class B>
concept TrainingBackend = StageBackend<B> && WorkerBackend<B> && std::same_as<typename B::Stage, Stage<B>> &&
                          requires {
                            typename B::Options;
                            typename B::Report;
                            typename B::Run;
                            B::require_available();
                          } && std::default_initializable<typename B::Report> && std::movable<typename B::Report> &&
                          TrainingRun<typename B::Run, B>;

// Optional: a backend whose layers split the backward into I and W
// (run_settings.hpp refuses I/W schedules otherwise), saying so with
// `static constexpr bool kRunsSplitBackward = true`. A backend that does not
// say keeps exec/layers/layer.hpp's refusing defaults.
template <class B>
concept SplitBackwardBackend =
    requires {
      { B::kRunsSplitBackward } -> std::convertible_to<bool>;
    } && bool(B::kRunsSplitBackward);

// Whether backend `B` runs split backwards, for check_train_options.
template <class B>
[[nodiscard]] constexpr bool runs_split_backward() {
  return SplitBackwardBackend<B>;
}

// Optional: ZeRO 1 (zero_shards.hpp). Optimizer state for the runs of each
// parameter this replica owns, `owned` per parameter; a stage of a backend
// without it refuses --zero.
template <class B>
concept ShardedOptimizerBackend =
    StageBackend<B> && requires(const OptimizerConfig& config, std::vector<Parameter<typename B::Tensor>>& parameters,
                                std::vector<std::vector<ValueRange>> owned, const typename B::Context& context) {
      { B::make_sharded_optimizer(config, parameters, std::move(owned), context) }
          -> std::convertible_to<typename B::Optimizer>;
    };

// Optional: data parallelism. The run holds the reduction of the stages'
// gradients over the replicas (null without replicas); the trainer hands it
// to the workers and aborts it with the run. Between processes meeting at the
// rendezvous store, only such a backend runs replicas (exec/dist/train_as_process.hpp).
template <class B>
concept GradientReducingBackend = requires(typename B::Run& run) {
  { run.gradient_reducer() } -> std::convertible_to<GradientReducer<typename B::Tensor>*>;
};

}  // namespace gpipe::exec
