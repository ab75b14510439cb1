// The CUDA backend: the shared runtime (exec/runtime/) on a GPU, in fp32.
// Two launch modes:
// - one GPU, K ranks: each rank's stages run on a stream of its own SM
//   partition (a green context, exec/cuda/base/green_context.hpp), one host
//   thread per rank enqueues the rank's actions, and activations and
//   gradients move as device-to-device copies on their own streams
//   (in_process_device_link.hpp);
// - one rank per process, one GPU each (torchrun, mpirun, srun): messages go
//   over NCCL (nccl_device_link.hpp), NCCL's ids through the rendezvous store.
// Every action's GPU interval is measured (CUPTI by default, device_timer.hpp).
//
// What this backend supplies to the runtime, a TrainingBackend
// (exec/runtime/training_backend.hpp), is here and in rank_device.hpp;
// the layers and kernels are in exec/cuda/layers/ and exec/cuda/kernels/.
// cuda_backend() is its entry in the registry (exec/registry/registry.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exec/backend.hpp"
#include "exec/cuda/backend/device_link.hpp"
#include "exec/cuda/backend/rank_device.hpp"
#include "exec/cuda/backend/run_timing.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/green_context.hpp"
#include "exec/cuda/cupti/activity_record.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"
#include "exec/cuda/layers/device_optimizer.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/nccl/device_transport.hpp"
#include "exec/runtime/gradient_reducer.hpp"
#include "exec/runtime/stage.hpp"
#include "exec/runtime/step_timeline.hpp"
#include "exec/runtime/trainer.hpp"

namespace gpipe::exec::cuda {

struct CudaBackend {
  static constexpr std::string_view kName = "cuda";

  using Tensor = DeviceTensor;
  using Message = Arrival;
  using Context = LayerContext;
  using Optimizer = DeviceOptimizerState;
  using Stage = exec::Stage<CudaBackend>;
  using RankDevice = cuda::RankDevice;

  struct Options {
    int device = 0;        // one GPU: the device; one rank per process: LOCAL_RANK
    int sm_per_stage = 0;  // 0: the even split of the device's SMs over the ranks
    ActionTiming timing = ActionTiming::cupti;
  };

  // What a run has to say beside its result.
  struct Report {
    // How the ranks share the GPU: "4 partitions of 32 SMs (4 of 132 unused)",
    // or plain streams with the reason green contexts could not be used.
    std::string partitions;
    bool green = false;
    // "cupti" or "events"; when CUPTI was asked for and could not collect, why.
    std::string timing;
    std::string timing_note;
    // Per rank of this process: the allocator's peak of requested bytes
    // (activations, messages, temporaries, parameters); and the device's own
    // peak of used bytes (cudaMemGetInfo).
    std::vector<std::int64_t> allocator_peak_bytes;
    std::int64_t device_peak_used_bytes = 0;
    // With CUPTI: the median step's kernels and copies, the ids of its actions
    // and its origin, for cupti::append_gpu_events; and the records dropped.
    cupti::ActivityRecords step_records;
    cupti::ExternalIdMap step_ids;
    std::int64_t step_origin_ns = 0;
    std::uint64_t dropped_records = 0;
  };

  static std::unique_ptr<DeviceLayer> make_layer(const models::Model& model, int index,
                                                 std::uint64_t seed, const Context& context) {
    return make_device_layer(model, index, seed, context);
  }
  static Optimizer make_optimizer(const OptimizerConfig& config,
                                  std::span<const DeviceParameter> parameters,
                                  const Context& context) {
    return {config, parameters, *context.allocator, *context.stream};
  }
  static bool all_finite(const Tensor& tensor, const Context& context) {
    return all_finite_on(tensor, *context.stream);
  }
  static std::vector<float> to_host(const Tensor& tensor, const Context& context);
  // A tied embedding's gradients (exec/runtime/stage.hpp): a copy charged to
  // none, and dst += src, on the context's stream.
  static Tensor copy_of(const Tensor& tensor, const Context& context);
  static void add_into(Tensor& dst, const Tensor& src, const Context& context);
  // RunError "no CUDA device: ..." without a usable GPU.
  static void require_available();

  // A run's resources in this process: the ranks' devices, the link and the timer.
  class Run {
   public:
    Run(const TrainOptions& options, const RunSettings& settings, const Placement& where,
        const Options& backend_options);

    [[nodiscard]] RankDevice& device(schedules::Rank rank) { return *devices_.at(rank.at()); }
    [[nodiscard]] Context context(schedules::Rank rank) { return device(rank).context(); }
    // With green contexts, `f` runs with the rank's context current, so that
    // what it makes (streams, events) belongs to the rank's partition.
    template <class F>
    void in_context(schedules::Rank rank, F&& f) {
      if (!partitions_) return f();
      const SmPartitions::ThreadBinding binding(*partitions_, rank.value);
      f();
    }
    [[nodiscard]] DeviceLink& link() { return *link_; }
    [[nodiscard]] ActionTimer& timer() { return timing_.timer(); }
    // Data parallelism: the reduction over this rank's replicas (NCCL's,
    // exec/cuda/nccl/nccl_gradient_reducer.hpp); null without.
    [[nodiscard]] GradientReducer<Tensor>* gradient_reducer() const { return reducer_.get(); }
    [[nodiscard]] MemoryPlacement memory_placement() const { return MemoryPlacement::action_bounds; }
    // The weights are on the GPU: timing starts (CUPTI collects from here on).
    void weights_ready();
    void finish();
    void abandon() noexcept;
    [[nodiscard]] std::string device_name() const;
    [[nodiscard]] Report report(int median_slot);

   private:
    const RunSettings& settings_;
    Placement where_;
    Options backend_options_;
    int device_index_;
    std::optional<SmPartitions> partitions_;          // one GPU, K ranks
    std::unique_ptr<DeviceTransport> transport_;      // one rank per process: NCCL
    std::unique_ptr<Stream> process_stream_;          // and its rank's compute stream
    std::unique_ptr<GradientReducer<Tensor>> reducer_;  // replicas: over them, on that stream's work
    CudaDeviceMemory memory_;
    std::vector<std::unique_ptr<RankDevice>> devices_;  // by rank; null for other processes'
    RunTiming timing_;
    std::unique_ptr<DeviceLink> link_;
    Report report_;
  };
};

// The CUDA backend's entry in the registry (exec/registry/registry.hpp).
[[nodiscard]] const Backend& cuda_backend();

}  // namespace gpipe::exec::cuda
