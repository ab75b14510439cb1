// The context-parallel group a CPU rank's attention shares keys and values
// over (models/context_parallel.hpp, Llama 3's all-gather form): C processes
// each hold a C-th of every sequence's tokens, gather the whole sequence's
// keys and values before attention, and sum their gradients of them back to
// their owners. What carries them is the launch's: MPI between processes
// (exec/mpi/mpi_context_parallel.hpp).
#pragma once

#include <span>

namespace gpipe::exec::cpu {

class ContextParallelComm {
 public:
  virtual ~ContextParallelComm() = default;
  [[nodiscard]] virtual int size() const = 0;  // C
  [[nodiscard]] virtual int rank() const = 0;  // this process's place, 0 to C - 1
  // Every member's `mine` (all of one size) into `all`, member after member:
  // all.size() = C x mine.size(). Returns once all of it is here.
  virtual void all_gather(std::span<const float> mine, std::span<float> all) = 0;
  // `all` (C blocks of mine.size()) summed over the group, member c getting
  // block c in `mine`. Returns once the sum is here.
  virtual void reduce_scatter_sum(std::span<const float> all, std::span<float> mine) = 0;
};

}  // namespace gpipe::exec::cpu
