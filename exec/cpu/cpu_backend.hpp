// The CPU backend: fp32 on host threads, OpenBLAS for the GEMMs, the
// numerical reference of every other backend. Each rank is a thread of this
// process; stages hand activations and gradients over in-process mailboxes
// (no bytes move), and every action is timed on the host's clock.
//
// CpuBackend is what the shared runtime (exec/runtime/: Stage, Worker,
// train_placed) is instantiated with, a TrainingBackend with every optional
// part (exec/runtime/training_backend.hpp); its entry in the registry, with
// ranks as MPI processes and inference streams, is exec/registry/cpu_entry.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/in_process_link.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/optimizer.hpp"
#include "exec/cpu/process_link.hpp"
#include "exec/cpu/timed_context_parallel.hpp"
#include "exec/cpu/timed_tensor_parallel.hpp"
#include "exec/runtime/gradient_reducer.hpp"
#include "exec/runtime/host_timer.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/stage.hpp"
#include "exec/runtime/step_timeline.hpp"
#include "exec/runtime/tensor.hpp"
#include "exec/runtime/trainer.hpp"

namespace gpipe::exec::cpu {

struct CpuBackend {
  static constexpr std::string_view kName = "cpu";
  static constexpr bool kRunsSplitBackward = true;  // every CPU layer kind has I and W

  using Tensor = exec::Tensor;
  using Message = exec::Tensor;  // a received tensor is usable at once
  // A stage's work runs on its rank's thread; with tensor parallelism its
  // blocks are this process's part of the group's split.
  struct Context {
    TensorParallelComm* tensor_parallel = nullptr;
    ContextParallelComm* context_parallel = nullptr;
  };
  using Optimizer = OptimizerState;
  using Stage = exec::Stage<CpuBackend>;
  struct Options {
    // Ranks as processes: the link between them, made for the run's timer
    // (exec/mpi/); empty: every rank a thread of this process.
    std::function<std::unique_ptr<ProcessLink>(ActionTimer& timer)> process_link;
    // Data parallelism: the reduction over the replicas (exec/mpi/), which
    // outlives the run; null without.
    GradientReducer<Tensor>* gradient_reducer = nullptr;
    // Tensor parallelism: the group this process's blocks are split over
    // (exec/mpi/), which outlives the run; null without.
    TensorParallelComm* tensor_parallel = nullptr;
    // Context parallelism: the group this process's blocks gather keys and
    // values over (exec/mpi/), which outlives the run; null without.
    ContextParallelComm* context_parallel = nullptr;
  };
  struct Report {};

  static std::unique_ptr<Layer> make_layer(const models::Model& model, int index, std::uint64_t seed,
                                           const Context& context) {
    if (context.tensor_parallel != nullptr) {
      return cpu::make_layer_part(model, index, seed, *context.tensor_parallel, context.context_parallel);
    }
    if (context.context_parallel != nullptr) {
      return cpu::make_context_layer(model, index, seed, *context.context_parallel);
    }
    return cpu::make_layer(model, index, seed);
  }
  static Optimizer make_optimizer(const OptimizerConfig& config, std::span<const Parameter> parameters,
                                  const Context& /*context*/) {
    return {config, parameters};
  }
  // ZeRO 1: state for the runs of each parameter this replica owns.
  static Optimizer make_sharded_optimizer(const OptimizerConfig& config, std::span<const Parameter> parameters,
                                          std::vector<std::vector<ValueRange>> owned, const Context& /*context*/) {
    return {config, parameters, std::move(owned)};
  }
  static bool all_finite(const Tensor& tensor, const Context& /*context*/);
  // A tied embedding's gradients (exec/runtime/stage.hpp): a copy charged to
  // none, and dst += src element by element.
  static Tensor copy_of(const Tensor& tensor, const Context& /*context*/) { return tensor.clone(); }
  static void add_into(Tensor& dst, const Tensor& src, const Context& /*context*/);
  static std::vector<float> to_host(const Tensor& tensor, const Context& /*context*/);
  static void require_available() {}

  // A rank computes on its own thread, with threads - 1 helpers when it has
  // more than one (its ComputeTeam): every call runs the work.
  class RankDevice {
   public:
    explicit RankDevice(int threads = 1, SpinBudget spin = SpinBudget::zero()) : threads_(threads), spin_(spin) {}
    // Starts the rank's team and enters it on this (the rank's) thread.
    void enter_thread();
    [[nodiscard]] Tensor upload(Tensor host) { return host; }
    void data_ready() {}
    [[nodiscard]] Tensor ready(Message message) { return message; }
    [[nodiscard]] Message local(Tensor tensor) { return tensor; }
    [[nodiscard]] bool all_finite(const Tensor& tensor) const;
    [[nodiscard]] double sum(const Tensor& tensor) const;
    void finish_step(RunControl& /*control*/) {}
    void drain() noexcept {}

   private:
    int threads_;
    SpinBudget spin_;  // how long the team's waiting threads poll
    std::unique_ptr<ComputeTeam> team_;
  };

  // A run's resources: a thread per rank, the host timer, in-process links.
  class Run {
   public:
    // With ranks in other processes, `backend_options.process_link` is the
    // link (InputError when there is none).
    Run(const TrainOptions& options, const RunSettings& settings, const Placement& where,
        const Options& backend_options);

    [[nodiscard]] RankDevice& device(schedules::Rank rank) { return devices_.at(rank.at()); }
    // With tensor or context parallelism a rank's layers meet their group
    // through a timed view of it, so that each collective shows on its trace.
    [[nodiscard]] Context context(schedules::Rank rank) const {
      return {timed_parts_.empty() ? nullptr : timed_parts_.at(rank.at()).get(),
              timed_context_.empty() ? nullptr : timed_context_.at(rank.at()).get()};
    }
    template <class F>
    void in_context(schedules::Rank /*rank*/, F&& f) {
      f();
    }
    [[nodiscard]] Link<Tensor>& link() {
      return process_link_ ? static_cast<Link<Tensor>&>(*process_link_) : in_process_link_;
    }
    [[nodiscard]] ActionTimer& timer() { return timer_; }
    [[nodiscard]] GradientReducer<Tensor>* gradient_reducer() const { return gradient_reducer_; }
    [[nodiscard]] MemoryPlacement memory_placement() const { return MemoryPlacement::host_time; }
    void weights_ready() {}
    void finish() {
      if (process_link_) process_link_->flush();
    }
    void abandon() noexcept {}
    [[nodiscard]] std::string device_name() const;
    [[nodiscard]] Report report(int /*median_slot*/) const { return {}; }

   private:
    HostTimer timer_;
    SpinBudget spin_;  // how long this run's waiting threads poll (polling_budget)
    InProcessLink in_process_link_;
    std::unique_ptr<ProcessLink> process_link_;  // ranks as processes
    GradientReducer<Tensor>* gradient_reducer_ = nullptr;
    std::vector<std::unique_ptr<TimedTensorParallel>> timed_parts_;  // by rank; empty without
    std::vector<std::unique_ptr<TimedContextParallel>> timed_context_;  // by rank; empty without
    std::vector<RankDevice> devices_;
    int threads_per_rank_;
  };
};

// Trains `options` on CPU threads, one per rank.
[[nodiscard]] TrainResult train(const TrainOptions& options);

}  // namespace gpipe::exec::cpu
