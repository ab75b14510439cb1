// The link between two ranks that are processes, measured two ways, in one
// MPI world (what `gpipe-run profile --backend cpu` does under mpirun or srun):
//
// - a ping-pong over MPI between ranks 0 and 1 at message sizes from 8 B to
//   64 MiB, the median round trip of each halved, then fitted as latency +
//   bytes / bandwidth (profiles/link_fit.hpp): two idle processes, the data
//   hot in cache. Its latency is the link's where the pipeline's messages
//   cannot tell theirs apart (profiles::fit_pipeline_link).
// - the transfers of a real pipeline (when `pipeline` is given and there are
//   exactly two processes): the model trained as K = 2 ranks, gpipe, at each
//   micro-batch size, each message timed as `gpipe-sim diff` times it
//   (timelines/transfers.hpp). There the receiver copies an activation its
//   peer has just written while the peer computes: slower per byte than the
//   ping-pong says, and each message pays a fixed cost besides (noticing it,
//   its buffer), which is why the profile's link is fitted to these.
// - an all-reduce (MPI_Iallreduce of floats) over every process of the
//   launch at the same sizes, each after a barrier, its median time fitted
//   as the ring's closed form over n processes (profiles/collectives.hpp):
//   the collective parameters a data-parallel reduction is priced with;
//   then ZeRO's reduce-scatter and all-gather (MPI_Ireduce_scatter and
//   MPI_Iallgatherv in place, as the executor calls them), each fitted alike.
//
// Declared in every build; without MPI it says so.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/runtime/optimizer_config.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cpu {
class TensorParallelComm;   // exec/cpu/tensor_parallel_comm.hpp
class ContextParallelComm;  // exec/cpu/context_parallel_comm.hpp
}  // namespace gpipe::exec::cpu

namespace gpipe::exec::mpi {

// Runs of each size, their messages pooled: one step's few messages are too
// few for a median on a machine whose messages vary by half.
inline constexpr int kPipelineRuns = 3;

struct PipelineProbe {
  models::Model model;
  std::vector<int> micro_batch_sizes;
  int microbatches = 4;  // M of each run: 2M messages a step
  int steps = 2;         // of which the first (cold) is not measured
  int runs = kPipelineRuns;
  int threads_per_rank = 1;
  std::uint64_t seed = 1;
  OptimizerConfig optimizer;
};

struct LinkProbeOptions {
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = std::int64_t{64} << 20;  // sizes double from min to max
  // Called on rank 0 as each size is measured.
  std::function<void(const profiles::LinkPoint&)> on_point;
  std::optional<PipelineProbe> pipeline;
  // Called on rank 0 as each micro-batch size's pipeline is measured: the
  // size, and its messages' median time in us.
  std::function<void(int micro_batch_size, double median_us)> on_pipeline;
  // When set, called on every process once the link is measured, while MPI
  // still runs: with tensor_parallel T > 1 (the launch's size), with the
  // world as one rank's tensor-parallel group, so that its T parts profile
  // their layers together; with context_parallel C > 1 (the launch's size),
  // as one rank's context-parallel group likewise; else with nulls.
  int tensor_parallel = 1;
  int context_parallel = 1;
  std::function<void(cpu::TensorParallelComm* tensor, cpu::ContextParallelComm* context)> in_world;
};

// One micro-batch size's pipeline messages: their median time.
struct PipelineTransfer {
  int micro_batch_size = 0;
  int messages = 0;
  double median_us = 0;
};

struct ProbedLink {
  int rank = 0;  // this process's
  int world_size = 1;
  profiles::Link link;  // on rank 0: fitted to the ping-pong, with its points; elsewhere empty
  // On rank 0, with `pipeline`: the partition the runs used (layers per
  // stage), and each size's transfers.
  std::vector<int> pipeline_partition;
  std::vector<PipelineTransfer> pipeline;
  // On rank 0: the all-reduce's fit, and the largest relative error of the
  // fit over its sizes.
  std::optional<profiles::CollectiveLink> collective;
  double collective_fit_max_error = 0;
  // On rank 0: the reduce-scatter's and all-gather's own fits.
  std::optional<profiles::CollectiveLink> reduce_scatter;
  std::optional<profiles::CollectiveLink> all_gather;
  std::string collective_measured_with;
};

// Collective: every process of the launch calls it (ranks past 1 only wait).
// Starts and ends MPI. Throws InputError with fewer than two processes, a
// pipeline asked of more than two, or a tensor-parallel group of another
// size than the launch's; RunError without MPI in this build or when MPI or a
// run fails.
[[nodiscard]] ProbedLink probe_mpi_link(const LinkProbeOptions& options);

}  // namespace gpipe::exec::mpi
