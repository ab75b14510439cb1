// Training a model through a pipeline schedule on one GPU: each rank's stages
// run on a stream of their own SM partition (a green context, exec/cuda/
// green_context.hpp), one host thread per rank enqueues the rank's lowered
// actions (cuda_worker.hpp), and activations and gradients move between the
// ranks as device-to-device copies on their own streams, ordered with events
// (in_process_device_link.hpp). Every action's GPU interval is measured
// (CUPTI by default, action_timer.hpp) into a Timeline with source "cuda",
// scored by the same metrics as the simulator's prediction and the CPU run.
//
// The options, the checks and the result are the CPU trainer's
// (exec/runtime/trainer.hpp): the same model, weights, data and schedule give the
// same losses and weights in fp32, up to the order of floating-point sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/cuda/cupti/activity_record.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"
#include "exec/cuda/backend/run_timing.hpp"
#include "exec/runtime/trainer.hpp"

namespace gpipe::exec::cuda {

struct CudaTrainOptions {
  int device = 0;
  int sm_per_stage = 0;  // 0: the even split of the device's SMs over the ranks
  ActionTiming timing = ActionTiming::cupti;
};

struct CudaTrainResult {
  TrainResult train;  // timeline source "cuda", device the GPU's name
  // How the ranks share the GPU: "4 partitions of 32 SMs (4 of 132 unused)",
  // or plain streams with the reason green contexts could not be used.
  std::string partitions;
  bool green = false;
  bool distributed = false;  // one process per rank (distributed_trainer.hpp): no SM partitions
  // "cupti" or "events"; when CUPTI was asked for and could not collect, why.
  std::string timing;
  std::string timing_note;
  // Per rank: the allocator's peak of requested bytes (activations, messages,
  // temporaries, parameters) and the device's own peak used bytes (cudaMemGetInfo).
  std::vector<std::int64_t> allocator_peak_bytes;
  std::int64_t device_peak_used_bytes = 0;
  // With CUPTI: the median step's kernels and copies, the ids of its actions
  // and its origin, for cupti::append_gpu_events; and the record counts.
  cupti::ActivityRecords step_records;
  cupti::ExternalIdMap step_ids;
  std::int64_t step_origin_ns = 0;
  std::uint64_t dropped_records = 0;
};

// Throws as exec::train (InputError before anything runs, RunError naming the
// rank and action), and RunError "no CUDA device: ..." without a GPU.
[[nodiscard]] CudaTrainResult train_cuda(const TrainOptions& options,
                                         const CudaTrainOptions& cuda_options = {});

}  // namespace gpipe::exec::cuda
