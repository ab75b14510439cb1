#include "exec/mpi/link_probe.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_context_parallel.hpp"
#include "exec/mpi/mpi_tensor_parallel.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/mpi/world_training.hpp"
#include "exec/runtime/zero_shards.hpp"
#include "models/collective.hpp"
#include "plan/microbatches.hpp"
#include "plan/model_profile.hpp"
#include "plan/plan.hpp"
#include "profiles/collectives.hpp"
#include "profiles/link_fit.hpp"
#include "timelines/transfers.hpp"

namespace gpipe::exec::mpi {
namespace {

constexpr int kWarmup = 2;

// Round trips per size: many for small messages (their time is noise-prone
// and cheap), fewer for large ones; about 64 MiB of traffic per size at most.
int round_trips(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{64} << 20) / bytes, 5, 200));
}

// Rank 0's median one-way time of `bytes`, in us; rank 1 echoes.
double ping_pong(const MpiWorld& world, std::vector<char>& buffer, std::int64_t bytes) {
  const int count = static_cast<int>(bytes);
  const int trips = round_trips(bytes);
  std::vector<double> times;
  for (int i = 0; i < kWarmup + trips; ++i) {
    if (world.rank() == 0) {
      const std::int64_t start = steady_now_ns();
      check(MPI_Send(buffer.data(), count, MPI_BYTE, 1, kProbeTag, MPI_COMM_WORLD), "MPI_Send");
      check(MPI_Recv(buffer.data(), count, MPI_BYTE, 1, kProbeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      if (i >= kWarmup) times.push_back(static_cast<double>(steady_now_ns() - start) / 2e3);
    } else {
      check(MPI_Recv(buffer.data(), count, MPI_BYTE, 0, kProbeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      check(MPI_Send(buffer.data(), count, MPI_BYTE, 0, kProbeTag, MPI_COMM_WORLD), "MPI_Send");
    }
  }
  if (times.empty()) return 0;
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

// Rank 0's median time of `collective` over the world on a buffer of
// `bytes` (nccl-tests' size: an all-reduce's buffer, a reduce-scatter's
// input, an all-gather's output), in us, each after a barrier so that no
// process's lateness is counted; called as the executor calls it
// (mpi_gradient_reducer.hpp: in place, non-blocking, polled): Open MPI's
// non-blocking collectives are other code than its blocking ones.
double collective_us(const MpiWorld& world, std::vector<float>& buffer, std::int64_t bytes,
                     models::Collective collective) {
  const int count = static_cast<int>(bytes / static_cast<std::int64_t>(sizeof(float)));
  // The reduce-scatter's and all-gather's runs: the executor's cut of one piece.
  const std::int64_t counts_of[] = {count};
  const ShardedPiece cut = sharded_pieces(counts_of, count, world.size()).front();
  // At least 11 calls a size: on a machine shared by both processes, 5 left
  // a large size's median off by a third from one profile to the next.
  const int calls = std::max(11, round_trips(bytes));
  std::vector<double> times;
  for (int i = 0; i < kWarmup + calls; ++i) {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const std::int64_t start = steady_now_ns();
    MPI_Request request = MPI_REQUEST_NULL;
    switch (collective) {
      case models::Collective::all_reduce:
        world.all_reduce(buffer.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, [] {});
        break;
      case models::Collective::reduce_scatter:
        check(MPI_Ireduce_scatter(MPI_IN_PLACE, buffer.data(), cut.counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                  &request),
              "MPI_Ireduce_scatter");
        world.wait(request, [] {});
        break;
      case models::Collective::all_gather:
        check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer.data(), cut.counts.data(),
                              cut.displacements.data(), MPI_FLOAT, MPI_COMM_WORLD, &request),
              "MPI_Iallgatherv");
        world.wait(request, [] {});
        break;
    }
    if (i >= kWarmup) times.push_back(static_cast<double>(steady_now_ns() - start) / 1e3);
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

struct CollectiveFit {
  profiles::CollectiveLink link;
  double max_error = 0;  // the largest relative error of the fit over its sizes
  std::string points;    // "24 sizes 16-67108864 B"
};

// `collective` over the world at sizes from 4 floats doubling up to
// `max_bytes`, on rank 0 fitted as the ring's closed form
// (profiles::collective_ring_fit). Elsewhere nullopt.
std::optional<CollectiveFit> probe_collective(const MpiWorld& world, std::int64_t max_bytes,
                                              models::Collective collective) {
  const int n = world.size();
  std::vector<float> buffer(static_cast<std::size_t>(max_bytes / static_cast<std::int64_t>(sizeof(float))), 0.0F);
  std::vector<profiles::LinkPoint> points;
  for (std::int64_t bytes = 16; bytes <= max_bytes; bytes *= 2) {
    const double us = collective_us(world, buffer, bytes, collective);
    if (world.rank() == 0) points.push_back({bytes, us});
  }
  if (world.rank() != 0) return std::nullopt;
  CollectiveFit fit{.link = profiles::collective_ring_fit(collective, n, points),
                    .max_error = 0,
                    .points = fmt::format("{} sizes {}-{} B", points.size(), points.front().bytes, points.back().bytes)};
  for (const profiles::LinkPoint& p : points) {
    const double model = static_cast<double>(profiles::collective_ns(collective, profiles::CollectiveAlgorithm::ring,
                                                                     n, p.bytes, fit.link)) / 1e3;
    fit.max_error = std::max(fit.max_error, std::abs(model - p.one_way_us) / p.one_way_us);
  }
  return fit;
}

// The all-reduce's fit, the collectives' parameters, and the reduce-scatter's
// and all-gather's of ZeRO's reductions and gathers, each its own: Open
// MPI's reduce-scatter is not half its all-reduce.
void probe_collectives(const MpiWorld& world, std::int64_t max_bytes, ProbedLink& out) {
  const auto all_reduce = probe_collective(world, max_bytes, models::Collective::all_reduce);
  const auto reduce_scatter = probe_collective(world, max_bytes, models::Collective::reduce_scatter);
  const auto all_gather = probe_collective(world, max_bytes, models::Collective::all_gather);
  if (world.rank() != 0) return;
  out.collective = all_reduce->link;
  out.collective_fit_max_error = all_reduce->max_error;
  out.reduce_scatter = reduce_scatter->link;
  out.all_gather = all_gather->link;
  out.collective_measured_with = fmt::format(
      "MPI_Iallreduce over {} processes ({}, the ring's closed form within {:.0f} % of each); "
      "MPI_Ireduce_scatter and MPI_Iallgatherv in place, fitted alike (within {:.0f} and {:.0f} %)",
      world.size(), all_reduce->points, 100 * all_reduce->max_error, 100 * reduce_scatter->max_error,
      100 * all_gather->max_error);
}

// One size's pipeline: K = 2 ranks, gpipe, M micro-batches of `size`
// samples, partitioned on the model's analytic costs (the same in every
// process, without a message), run probe.runs times. On the reporter (rank 1,
// the loss stage) the median of every run's messages; elsewhere 0.
PipelineTransfer pipeline_transfers(MpiWorld& world, const PipelineProbe& probe, int size,
                                    std::vector<int>& partition) {
  const std::vector<int> sizes(static_cast<std::size_t>(probe.microbatches), size);
  plan::PlanRequest request;
  request.schedule = "gpipe";
  request.stages = 2;
  request.microbatches = probe.microbatches;
  request.batch = std::int64_t{size} * probe.microbatches;
  const profiles::Profile costs = plan::balancing_profile(probe.model, plan::distinct_sizes(sizes));
  const plan::Plan plan = plan::make_plan(costs, request, sizes);
  partition = plan.partition.layers_per_stage;
  TrainOptions t;
  t.model = probe.model;
  t.schedule = plan.schedule;
  t.partition = plan.partition;
  t.batch = request.batch;
  t.steps = probe.steps;
  t.measured_steps = 1;
  t.seed = probe.seed;
  t.optimizer = probe.optimizer;
  t.threads_per_rank = probe.threads_per_rank;
  PipelineTransfer out{size, 0, 0};
  std::vector<double> took;
  for (int run = 0; run < probe.runs; ++run) {
    const TrainResult result = train_in_world(world, t, "the launcher").result;
    if (!result.reporter) continue;
    for (const auto& m : timelines::measured_transfers(result.timeline)) {
      took.push_back(static_cast<double>(m.took_ns) / 1e3);
    }
  }
  out.messages = static_cast<int>(took.size());
  if (!took.empty()) {
    std::nth_element(took.begin(), took.begin() + static_cast<std::ptrdiff_t>(took.size() / 2), took.end());
    out.median_us = took[took.size() / 2];
  }
  return out;
}

// "--tensor-parallel T", "--context-parallel C" or both, for the errors.
std::string group_flags(int tensor, int context) {
  if (tensor > 1 && context > 1) return fmt::format("--tensor-parallel {} with --context-parallel {}", tensor, context);
  return tensor > 1 ? fmt::format("--tensor-parallel {}", tensor) : fmt::format("--context-parallel {}", context);
}

// A communicator of the world's processes of one colour, ordered by key, freed
// with its holder.
struct SplitComm {
  MPI_Comm comm = MPI_COMM_NULL;
  SplitComm() = default;
  SplitComm(int color, int key) { check(MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm), "MPI_Comm_split"); }
  SplitComm(SplitComm&& other) noexcept : comm(std::exchange(other.comm, MPI_COMM_NULL)) {}
  SplitComm& operator=(SplitComm&& other) noexcept {
    std::swap(comm, other.comm);
    return *this;
  }
  SplitComm(const SplitComm&) = delete;
  SplitComm& operator=(const SplitComm&) = delete;
  ~SplitComm() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

}  // namespace

ProbedLink probe_mpi_link(const LinkProbeOptions& options) {
  MpiWorld world;
  ProbedLink out{world.rank(), world.size(), {}};
  if (world.size() < 2) {
    throw InputError("measuring the link needs two processes: start it with mpirun -np 2 (or srun -n 2)");
  }
  if (options.pipeline && world.size() != 2) {
    throw InputError(fmt::format("measuring the link in a pipeline takes exactly two processes, not {}: start "
                                 "it with mpirun -np 2 (or srun -n 2)",
                                 world.size()));
  }
  // Where ranks 0 and 1 run, for the profile's record of how it was measured.
  std::vector<char> hosts(2 * MPI_MAX_PROCESSOR_NAME, '\0');
  if (world.rank() < 2) {
    std::copy(world.host().begin(), world.host().end(), hosts.begin() + world.rank() * MPI_MAX_PROCESSOR_NAME);
  }
  check(MPI_Allreduce(MPI_IN_PLACE, hosts.data(), static_cast<int>(hosts.size()), MPI_UNSIGNED_CHAR, MPI_MAX,
                      MPI_COMM_WORLD),
        "MPI_Allreduce");
  std::vector<profiles::LinkPoint> points;
  if (world.rank() < 2) {
    std::vector<char> buffer(static_cast<std::size_t>(options.max_bytes), 1);
    for (std::int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
      const profiles::LinkPoint point{bytes, ping_pong(world, buffer, bytes)};
      if (world.rank() == 0) {
        points.push_back(point);
        if (options.on_point) options.on_point(point);
      }
    }
  }
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  probe_collectives(world, options.max_bytes, out);
  if (options.pipeline) {
    for (const int size : options.pipeline->micro_batch_sizes) {
      PipelineTransfer measured = pipeline_transfers(world, *options.pipeline, size, out.pipeline_partition);
      // The reporter, rank 1, has the timeline: its medians go to rank 0.
      std::array<double, 2> sent{static_cast<double>(measured.messages), measured.median_us};
      if (world.rank() == 1) {
        check(MPI_Send(sent.data(), 2, MPI_DOUBLE, 0, kProbeTag, MPI_COMM_WORLD), "MPI_Send");
      } else {
        check(MPI_Recv(sent.data(), 2, MPI_DOUBLE, 1, kProbeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        measured.messages = static_cast<int>(sent[0]);
        measured.median_us = sent[1];
        out.pipeline.push_back(measured);
        if (options.on_pipeline) options.on_pipeline(size, measured.median_us);
      }
    }
  }
  if (options.in_world) {
    std::optional<FailureWatch> watch;
    SplitComm tensor_comm, context_comm;  // outlive the groups made on them
    std::unique_ptr<MpiTensorParallel> group;
    std::unique_ptr<MpiContextParallel> members;
    const int tensor = std::max(1, options.tensor_parallel);
    const int context = std::max(1, options.context_parallel);
    if (tensor * context > 1 && world.size() != tensor * context) {
      throw InputError(fmt::format("{} profiles the {} processes of one rank, one each: start it with mpirun -np {}, "
                                   "not {}",
                                   group_flags(tensor, context), tensor * context, tensor * context, world.size()));
    }
    if (tensor * context > 1) watch.emplace(world);
    // As a run lays out one rank's parts: process c T + t is part t of member c.
    if (context > 1) {
      context_comm = SplitComm(world.rank() % tensor, world.rank() / tensor);
      members = std::make_unique<MpiContextParallel>(world, *watch, context_comm.comm);
    }
    if (tensor > 1) {
      tensor_comm = SplitComm(world.rank() / tensor, world.rank() % tensor);
      group = std::make_unique<MpiTensorParallel>(world, *watch, tensor_comm.comm);
    }
    if ((group && group->rank() != world.rank() % tensor) || (members && members->rank() != world.rank() / tensor)) {
      throw std::logic_error(fmt::format("process {}: part {} of member {}, where a run lays it out as part {} of "
                                         "member {}",
                                         world.rank(), group ? group->rank() : 0, members ? members->rank() : 0,
                                         world.rank() % tensor, world.rank() / tensor));
    }
    // A part that fails tells the others, which wait in its all-reduces, and
    // no process waits in MPI_Finalize for a peer that is gone.
    try {
      options.in_world(group.get(), members.get());
    } catch (const std::exception& e) {
      if (watch) watch->announce(fmt::format("process {} failed measuring its part: {}", world.rank(), e.what()));
      world.skip_finalize();
      throw;
    }
  }
  if (world.rank() == 0) {
    const std::string host0(hosts.data());
    const std::string host1(hosts.data() + MPI_MAX_PROCESSOR_NAME);
    out.link = profiles::fit_link(
        std::move(points),
        host0 == host1 ? fmt::format("MPI ping-pong between ranks 0 and 1 on one node ({})", host0)
                       : fmt::format("MPI ping-pong between ranks 0 and 1 on {} and {}", host0, host1));
  }
  return out;
}

}  // namespace gpipe::exec::mpi
