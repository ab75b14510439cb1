#include "exec/mpi/mpi_gradient_reducer.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace gpipe::exec::mpi {

MpiGradientReducer::MpiGradientReducer(const MpiWorld& world, FailureWatch& watch, MPI_Comm group,
                                       std::int64_t bucket_bytes, bool one_clock)
    : world_(world),
      watch_(watch),
      group_(group),
      bucket_floats_(float_bucket(bucket_bytes)),
      one_clock_(one_clock) {
  if (group == MPI_COMM_NULL) throw std::logic_error("a gradient reducer needs a data-parallel group");
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
  std::vector<std::int64_t> sizes;
  for (const Tensor* g : gradients) sizes.push_back(g->numel());
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
  // The reduction could not end before the last replica started it: it is
  // timed from then, as a message is from the later of its two sides
  // (schedules/transfers.hpp), so that a replica's lateness is not counted
  // as the collective's. One steady clock on one node; across nodes the
  // clocks' offsets are not known here, and the own start stands.
  std::int64_t latest = p.start.time_since_epoch().count();
  if (one_clock_) world_.all_reduce(&latest, 1, MPI_INT64_T, MPI_MAX, group_, between);
  const Clock::time_point start{Clock::duration{latest}};
  const Times times{std::min(start, p.end), p.end};
  pending_.erase(found);
  return times;
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
