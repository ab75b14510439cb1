// What `gpipe-run infer` asks of a backend, and what it gets back: an
// inference stream (schedules/serving_workload.hpp) through K stages, forward
// only (docs/design.md, "Inference"). The CPU serves it on threads
// (cpu_serving.hpp) or as processes (exec/mpi/mpi_serving.hpp), the CUDA
// backend on SM partitions of one GPU (exec/cuda/inference/cuda_serving.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/runtime/tensor.hpp"
#include "models/model.hpp"
#include "schedules/serving_workload.hpp"
#include "timelines/serving_run.hpp"

namespace gpipe::exec::inference {

struct ServingRequest {
  const models::Model* model = nullptr;
  std::vector<int> layers_per_stage;  // K stages, one per rank
  int micro_batch_size = 1;
  schedules::Workload workload;
  std::uint64_t seed = 1;      // of the weights and the data, as in training
  int threads_per_rank = 1;    // the CPU's
  int warmup_items = 2;        // forwards each rank runs alone before the run starts (untimed)
  bool keep_outputs = false;   // keep every item's output (tests, --check-outputs)
};

struct ServingResult {
  timelines::ServingRun run;      // measured: items, busy, peaks, the timeline (source "cpu" or "cuda")
  std::vector<Tensor> outputs;   // per item, with keep_outputs, on the host
  std::vector<std::int64_t> static_bytes;  // per rank: its weights (f32)
};

}  // namespace gpipe::exec::inference
