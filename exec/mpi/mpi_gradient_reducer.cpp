#include "exec/mpi/mpi_gradient_reducer.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "models/collective.hpp"

namespace gpipe::exec::mpi {

MpiGradientReducer::MpiGradientReducer(const MpiWorld& world, FailureWatch& watch, MPI_Comm group,
                                       std::int64_t bucket_bytes, bool one_clock, int zero)
    : world_(world),
      watch_(watch),
      group_(group),
      bucket_floats_(float_bucket(bucket_bytes)),
      one_clock_(one_clock),
      zero_(zero) {
  if (group == MPI_COMM_NULL) throw std::logic_error("a gradient reducer needs a data-parallel group");
  if (zero != 0 && zero != 1) throw std::logic_error("the MPI reducer runs ZeRO 0 and 1");
  // The stages cut their optimizers' shares over the executor's bucket
  // (RunSettings::zero_share): the reduce-scatters must cut the same runs.
  if (zero > 0 && bucket_floats_ != float_bucket(models::kGradientBucketBytes)) {
    throw std::logic_error("ZeRO 1's reducer must use the executor's bucket, which the stages' shares are cut over");
  }
  check(MPI_Comm_size(group, &replicas_), "MPI_Comm_size");
  check(MPI_Comm_rank(group, &replica_), "MPI_Comm_rank");
}

// After a failure a reduction may still be posted, and its peers may be
// gone: its requests are left to MPI (the process is ending).
MpiGradientReducer::~MpiGradientReducer() = default;

void MpiGradientReducer::start(schedules::Stage stage, std::vector<Tensor*> gradients) {
  if (pending_.contains(stage.value)) {
    throw std::logic_error(fmt::format("stage {}: a second reduction before the first was awaited", stage.value));
  }
  Pending& p = pending_[stage.value];
  p.start = Clock::now();
  const std::vector<std::int64_t> sizes = tensor_sizes(gradients);
  if (zero_ > 0) {
    p.shards = sharded_pieces(sizes, bucket_floats_, replicas_);
    p.gradients = std::move(gradients);
    for (const ShardedPiece& sp : p.shards) {
      MPI_Request& request = p.requests.emplace_back(MPI_REQUEST_NULL);
      check(MPI_Ireduce_scatter(MPI_IN_PLACE, p.gradients[sp.piece.tensor]->f32().data() + sp.piece.first,
                                sp.counts.data(), MPI_FLOAT, MPI_SUM, group_, &request),
            "MPI_Ireduce_scatter");
    }
    test(p);
    return;
  }
  for (const ReductionPiece& piece : reduction_pieces(sizes, bucket_floats_)) {
    MPI_Request& request = p.requests.emplace_back(MPI_REQUEST_NULL);
    check(MPI_Iallreduce(MPI_IN_PLACE, gradients[piece.tensor]->f32().data() + piece.first,
                         static_cast<int>(piece.count), MPI_FLOAT, MPI_SUM, group_, &request),
          "MPI_Iallreduce");
  }
  test(p);
}

bool MpiGradientReducer::test(Pending& p) {
  if (p.ended) return true;
  int done = 0;
  check(MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &done, MPI_STATUSES_IGNORE),
        "MPI_Testall");
  if (done != 0) {
    p.end = Clock::now();
    p.ended = true;
  }
  return p.ended;
}

void MpiGradientReducer::progress() {
  for (auto& [stage, p] : pending_) test(p);
}

GradientReducer<Tensor>::Times MpiGradientReducer::wait(schedules::Stage stage) {
  const auto found = pending_.find(stage.value);
  if (found == pending_.end()) {
    throw std::logic_error(fmt::format("stage {}: WAIT_REDUCE_GRAD without its REDUCE_GRAD", stage.value));
  }
  Pending& p = found->second;
  const auto between = [this] { watch_.check(); };
  for (MPI_Request& request : p.requests) {
    if (!p.ended) world_.wait(request, between);
  }
  test(p);
  place_sums(p);
  // The reduction could not end before the last replica started it: it is
  // timed from then, as a message is from the later of its two sides
  // (timelines/transfers.hpp), so that a replica's lateness is not counted
  // as the collective's. One steady clock on one node; across nodes the
  // clocks' offsets are not known here, and the own start stands.
  std::int64_t latest = p.start.time_since_epoch().count();
  if (one_clock_) world_.all_reduce(&latest, 1, MPI_INT64_T, MPI_MAX, group_, between);
  const Clock::time_point start{Clock::duration{latest}};
  const Times times{std::min(start, p.end), p.end};
  pending_.erase(found);
  return times;
}

void MpiGradientReducer::place_sums(const Pending& p) const {
  const auto r = static_cast<std::size_t>(replica_);
  for (const ShardedPiece& sp : p.shards) {
    if (sp.displacements[r] == 0 || sp.counts[r] == 0) continue;
    float* piece = p.gradients[sp.piece.tensor]->f32().data() + sp.piece.first;
    std::memmove(piece + sp.displacements[r], piece, static_cast<std::size_t>(sp.counts[r]) * sizeof(float));
  }
}

void MpiGradientReducer::gather(schedules::Stage /*stage*/, std::vector<Tensor*> values) {
  if (zero_ == 0) throw std::logic_error("a weight gather without ZeRO");
  // A member, so that its counts outlive requests left posted by a failure.
  gather_cut_ = sharded_pieces(tensor_sizes(values), bucket_floats_, replicas_);
  std::vector<MPI_Request> requests(gather_cut_.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < gather_cut_.size(); ++i) {
    const ShardedPiece& sp = gather_cut_[i];
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values[sp.piece.tensor]->f32().data() + sp.piece.first,
                          sp.counts.data(), sp.displacements.data(), MPI_FLOAT, group_, &requests[i]),
          "MPI_Iallgatherv");
  }
  // The rank's other stages' reductions move on, and their ends are noted, meanwhile.
  const auto between = [this] {
    watch_.check();
    progress();
  };
  for (MPI_Request& request : requests) world_.wait(request, between);
}

void MpiGradientReducer::sum_in_place(Tensor& tensor) {
  world_.all_reduce(tensor.f32().data(), static_cast<int>(tensor.numel()), MPI_FLOAT, MPI_SUM, group_,
                    [this] { watch_.check(); });
}

double MpiGradientReducer::sum(double value) {
  world_.all_reduce(&value, 1, MPI_DOUBLE, MPI_SUM, group_, [this] { watch_.check(); });
  return value;
}

}  // namespace gpipe::exec::mpi
