#include "exec/mpi/mpi_gradient_reducer.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace gpipe::exec::mpi {

MpiGradientReducer::MpiGradientReducer(const MpiWorld& world, FailureWatch& watch, MPI_Comm group,
                                       std::int64_t bucket_bytes)
    : world_(world),
      watch_(watch),
      group_(group),
      bucket_floats_(std::max<std::int64_t>(1, bucket_bytes / static_cast<std::int64_t>(sizeof(float)))) {
  if (group == MPI_COMM_NULL) throw std::logic_error("a gradient reducer needs a data-parallel group");
}

MpiGradientReducer::~MpiGradientReducer() {
  // After a failure a reduction may still be posted: MPI must not write into
  // freed buffers, and its peers may be gone, so the requests are left to
  // MPI and the buffers kept (the process is ending).
  static std::vector<std::vector<float>> abandoned;
  for (auto& [stage, p] : pending_) {
    if (!p.ended) abandoned.push_back(std::move(p.values));
  }
}

void MpiGradientReducer::start(schedules::Stage stage, std::vector<Tensor*> gradients) {
  if (pending_.contains(stage.value)) {
    throw std::logic_error(fmt::format("stage {}: a second reduction before the first was awaited", stage.value));
  }
  Pending& p = pending_[stage.value];
  p.start = Clock::now();
  p.gradients = std::move(gradients);
  std::size_t count = 0;
  for (const Tensor* g : p.gradients) count += g->f32().size();
  p.values.resize(count);
  auto at = p.values.begin();
  for (const Tensor* g : p.gradients) at = std::copy(g->f32().begin(), g->f32().end(), at);
  for (std::size_t first = 0; first < count; first += static_cast<std::size_t>(bucket_floats_)) {
    const auto n = std::min(count - first, static_cast<std::size_t>(bucket_floats_));
    MPI_Request& request = p.requests.emplace_back(MPI_REQUEST_NULL);
    check(MPI_Iallreduce(MPI_IN_PLACE, p.values.data() + first, static_cast<int>(n), MPI_FLOAT, MPI_SUM, group_,
                         &request),
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
  auto at = p.values.begin();
  for (Tensor* g : p.gradients) {
    const auto n = static_cast<std::ptrdiff_t>(g->f32().size());
    std::copy(at, at + n, g->f32().begin());
    at += n;
  }
  const Times times{p.start, p.end};
  pending_.erase(found);
  return times;
}

double MpiGradientReducer::sum(double value) {
  MPI_Request request = MPI_REQUEST_NULL;
  double total = 0;
  check(MPI_Iallreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, group_, &request), "MPI_Iallreduce");
  world_.wait(request, [this] { watch_.check(); });
  return total;
}

}  // namespace gpipe::exec::mpi
