#include "exec/mpi/mpi_tensor_parallel.hpp"

#include <stdexcept>

namespace gpipe::exec::mpi {

MpiTensorParallel::MpiTensorParallel(const MpiWorld& world, FailureWatch& watch, MPI_Comm group)
    : world_(world), watch_(watch), group_(group) {
  if (group == MPI_COMM_NULL) throw std::logic_error("a tensor-parallel group needs its communicator");
  check(MPI_Comm_size(group, &size_), "MPI_Comm_size");
  check(MPI_Comm_rank(group, &rank_), "MPI_Comm_rank");
}

void MpiTensorParallel::all_reduce_sum(std::span<float> values) {
  world_.all_reduce(values.data(), static_cast<int>(values.size()), MPI_FLOAT, MPI_SUM, group_,
                    [this] { watch_.check(); });
}

}  // namespace gpipe::exec::mpi
