// `gpipe-run infer` on the CPU: an inference stream (schedules/stream_workload.hpp)
// through K stages, each rank a thread of this process with its own compute
// team, forward only (DESIGN.md, "Inference"; what each rank does:
// stream_rank.hpp). The ranks hand activations over the in-process link (a
// pointer moves: an item's input arrives as its sender hands it over), and
// share one Admission. Measured on the host clock from the stream's start.
// exec/mpi/mpi_stream.hpp runs the same ranks as processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/runtime/tensor.hpp"
#include "models/model.hpp"
#include "schedules/stream.hpp"
#include "schedules/stream_workload.hpp"

namespace gpipe::exec::inference {

struct StreamRequest {
  const models::Model* model = nullptr;
  std::vector<int> layers_per_stage;  // K stages, one per rank
  int micro_batch_size = 1;
  schedules::Workload workload;
  std::uint64_t seed = 1;      // of the weights and the data, as in training
  int threads_per_rank = 1;
  int warmup_items = 2;        // forwards each rank runs alone before the stream starts (untimed)
  bool keep_outputs = false;   // keep every item's output (tests, --check-outputs)
};

struct StreamResult {
  schedules::StreamRun run;      // measured: items, busy, peaks, the timeline (source "cpu")
  std::vector<Tensor> outputs;   // per item, with keep_outputs
  std::vector<std::int64_t> static_bytes;  // per rank: its weights (f32)
};

// Throws InputError for a request that cannot be (a partition that does not
// sum to the model's layers, a workload validate_workload refuses), and
// RunError naming the rank and the item for a failure while running.
[[nodiscard]] StreamResult run_cpu_stream(const StreamRequest& request);

}  // namespace gpipe::exec::inference
