// `gpipe-run infer` on the CPU: an inference stream (schedules/stream_workload.hpp)
// through K stages, each rank a thread of this process with its own compute
// team, forward only (DESIGN.md, "Inference"). Stage 0's rank draws item r's
// samples (the synthetic task's batch of "step" r, b samples), waits for its
// admission and runs its forward; each later rank receives the activation
// over the in-process link, runs its forward and hands it on; the last
// rank's output is the model's (its loss layer's per-sample value against
// the item's target). Each forward keeps nothing: the layers' stashes are
// dropped as soon as they are made, and no gradient exists.
//
// Before the stream starts, each rank runs its forward `warmup_items` times
// alone (untimed), so that the first items do not pay for first touches.
// Measured, on the host clock from the stream's start: every item's
// arrival, admission and completion; every F, and every send's hand-over
// (the SEND_F and RECV_F of the timeline: an in-process message moves a
// pointer). Memory follows the simulator's rules on the measured times: a
// rank holds an item's input from the moment it was handed over until its
// forward ends, and its output from the start of its forward until it is
// handed on (the last rank's until its forward ends).
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
