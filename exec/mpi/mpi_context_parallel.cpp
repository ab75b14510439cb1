#include "exec/mpi/mpi_context_parallel.hpp"

#include <stdexcept>

namespace gpipe::exec::mpi {

MpiContextParallel::MpiContextParallel(const MpiWorld& world, FailureWatch& watch, MPI_Comm group)
    : world_(world), watch_(watch), group_(group) {
  if (group == MPI_COMM_NULL) throw std::logic_error("a context-parallel group needs its communicator");
  check(MPI_Comm_size(group, &size_), "MPI_Comm_size");
  check(MPI_Comm_rank(group, &rank_), "MPI_Comm_rank");
}

void MpiContextParallel::all_gather(std::span<const float> mine, std::span<float> all) {
  if (all.size() != mine.size() * static_cast<std::size_t>(size_)) {
    throw std::logic_error("context-parallel all-gather: the whole is not C times a part");
  }
  MPI_Request request = MPI_REQUEST_NULL;
  const int count = static_cast<int>(mine.size());
  check(MPI_Iallgather(mine.data(), count, MPI_FLOAT, all.data(), count, MPI_FLOAT, group_, &request),
        "MPI_Iallgather");
  world_.wait(request, [this] { watch_.check(); });
}

void MpiContextParallel::reduce_scatter_sum(std::span<const float> all, std::span<float> mine) {
  if (all.size() != mine.size() * static_cast<std::size_t>(size_)) {
    throw std::logic_error("context-parallel reduce-scatter: the whole is not C times a part");
  }
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ireduce_scatter_block(all.data(), mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, MPI_SUM,
                                  group_, &request),
        "MPI_Ireduce_scatter_block");
  world_.wait(request, [this] { watch_.check(); });
}

}  // namespace gpipe::exec::mpi
