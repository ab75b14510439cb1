// One rank of a serving run (docs/design.md, "Inference"), whatever its
// peers are: threads of this process (cpu_serving.cpp) or processes under
// mpirun or srun (exec/mpi/mpi_serving.cpp). Stage 0's rank draws item r's
// samples (the synthetic task's batch of "step" r, b samples), waits for its
// admission and runs its forward; each later rank receives the activation,
// runs its forward and hands it on; the last rank's output is the model's
// (its loss layer's per-sample value against the item's target). Each
// forward keeps nothing: the layers' stashes are dropped as soon as they are
// made, and no gradient exists.
//
// Before the run starts, the rank runs its forward `warmup_items` times
// alone (untimed), so that the first items do not pay for first touches.
// Each rank records, in ns from the run's start on the one clock its
// peers agree on: its F and SEND_F intervals, its memory changes, and per
// item what it alone knows (stage 0: arrival and admission; a receiver: when
// the input arrived; the last stage: completion). assemble_serving() puts the
// ranks' records together as the simulator's ServingRun.
//
// Layers with state (dit's cache=1) keep it per sequence in flight, item r
// serving stream r mod B, made zeroed before the run starts and held
// throughout. Memory follows the simulator's rules: a rank holds an item's input from
// its arrival until its forward ends, and its output from the start of its
// forward until its send starts (the last rank's until its forward ends);
// in flight it is charged to no rank. An input's arrival is the earlier of
// the receive's return and the end of its SEND: between threads the
// hand-over is the arrival; between processes a message that comes while
// its receiver computes is not seen until the receive, and counts from its
// SEND's end, as between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/inference/admission.hpp"
#include "exec/inference/serving_request.hpp"
#include "exec/runtime/tensor.hpp"
#include "timelines/serving_run.hpp"

namespace gpipe::exec::inference {

// What one rank records; every time in ns from the run's start.
struct RankRecord {
  int stage = 0;
  std::vector<timelines::TimedAction> actions;  // its F and SEND_F
  std::vector<timelines::MemoryChange> changes;
  std::int64_t busy_ns = 0;
  std::int64_t state_bytes = 0;  // what its layers keep for the sequences (dit's cache=1), from the start
  // Per item; -1 where this rank does not know it.
  std::vector<std::int64_t> arrival_ns;    // stage 0
  std::vector<std::int64_t> admitted_ns;   // stage 0
  std::vector<std::int64_t> received_ns;   // stages > 0: the input is here (the receive returned)
  std::vector<std::int64_t> received_bytes;  // stages > 0: the input's bytes
  std::vector<std::int64_t> completed_ns;  // the last stage
  std::vector<Tensor> outputs;             // the last stage, with keep_outputs
};

// What a rank talks through, for a backend whose stages compute with `T`.
// Every wait ends with Aborted when the run is aborted (another rank failed).
template <class T>
class ServingPeersOf {
 public:
  virtual ~ServingPeersOf() = default;
  // This rank is ready (built and warmed, or failed at it): returns when the run starts.
  virtual void start_line() = 0;
  // Now, in ns from the run's start.
  [[nodiscard]] virtual std::int64_t now_ns() const = 0;
  // Stage 0: blocks until `item` may enter (admission.hpp).
  [[nodiscard]] virtual Admission::Entry admit(int item) = 0;
  // The last stage: `item` left at `completed_ns`.
  virtual void completed(int item, std::int64_t completed_ns) = 0;
  struct Received {
    T tensor;
    std::int64_t arrived_ns = 0;
  };
  // Stage s > 0: item's activation from stage s - 1, usable when this returns.
  [[nodiscard]] virtual Received receive(int stage, int item) = 0;
  // Stage s: item's activation to stage s + 1, handed over at `handed_ns`
  // (now); returns once the link has it.
  virtual void send(int stage, int item, std::int64_t handed_ns, T activation) = 0;
};

// The CPU's: host tensors, between threads or processes.
using ServingPeers = ServingPeersOf<Tensor>;

// Runs stage `stage` of `num_stages` for the whole stream into `record`, on
// the CPU (rank_loop.hpp has the loop every backend runs). Throws what
// building, warming up or a forward throws (after start_line(), so that no
// peer waits for this rank at the start), or Aborted.
void run_serving_rank(const ServingRequest& request, int stage, int num_stages, ServingPeers& peers,
                     RankRecord& record);

// Throws InputError for a request that cannot be (a partition that does not
// sum to the model's layers, a workload validate_workload refuses).
void check_serving_request(const ServingRequest& request);

// The stream as the simulator describes it, from every rank's record (in
// stage order): items, busy, peaks, the timeline, described as run on
// `device` by backend `source` ("cpu", "cuda").
// Each RECV_F spans its SEND_F's start to the later of the send's end and the
// receive's return; each input counts from its arrival (above).
[[nodiscard]] ServingResult assemble_serving(const ServingRequest& request, std::vector<RankRecord> records,
                                           const std::string& device, const std::string& source = "cpu");

// The per-stage weights (f32 bytes) of the request's partition.
[[nodiscard]] std::vector<std::int64_t> stage_weight_bytes(const ServingRequest& request);

// RankRecord as JSON text and back, for the processes' gathering (exact: integers).
[[nodiscard]] std::string to_json_text(const RankRecord& record);
[[nodiscard]] RankRecord parse_rank_record(const std::string& text);

}  // namespace gpipe::exec::inference
