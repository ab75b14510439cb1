// `gpipe-run infer --backend cuda`: a serving run (docs/design.md,
// "Inference") through K stages on one GPU, each rank a thread of this
// process computing on its own SM partition (green contexts, as training's
// ranks do), forward only. What each rank does is the CPU's rank loop
// (exec/inference/rank_loop.hpp) with the device's tensors: activations go
// device to device between the ranks (InProcessDeviceLink), and each forward
// and each copy is waited for before the host reads its clock, so items are
// timed on the host clock from the run's start, as on the CPU.
#pragma once

#include "exec/inference/serving_request.hpp"

namespace gpipe::exec::cuda {

struct CudaServingOptions {
  int device = 0;
  int sm_per_stage = 0;  // 0: the device's SMs split evenly over the ranks
};

// Throws InputError for a request that cannot be (a partition that does not
// cover the model, a workload validate_workload refuses, dit's cache=1,
// which the CUDA layers do not keep), RunError without a device and naming
// the rank and item for a failure while running.
[[nodiscard]] inference::ServingResult run_cuda_serving(const inference::ServingRequest& request,
                                                      const CudaServingOptions& options);

}  // namespace gpipe::exec::cuda
