// The link of ranks that are processes, on the CPU: host tensors as real
// bytes over MPI's non-blocking point-to-point calls (shared memory on one
// node, TCP or InfiniBand across nodes, as Open MPI chooses).
//
// A message is two sends on one tag: a header (element type and shape), then
// the values straight from the tensor, which stays alive until MPI is done
// with it. The tag names (kind, stage, micro-batch) as the in-process
// mailboxes do; a step's messages are all received before any rank passes
// the next step's barrier, so the step need not be in it. SEND returns once
// both are posted; RECV polls (FailureWatch) until the values are here.
// Both are timed on the run's timer as the SEND's and the RECV's intervals.
#pragma once

#include <array>
#include <cstdint>
#include <list>

#include "exec/cpu/process_link.hpp"
#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::mpi {

class MpiLink final : public cpu::ProcessLink {
 public:
  // Tags for `num_stages` stages and `num_microbatches` micro-batches; throws
  // InputError when they do not fit MPI's largest tag. The pipeline's rank r
  // is world rank first_world_rank + r x stride (a replica's and a part's,
  // with data and tensor parallelism: MpiProcessGroup).
  MpiLink(const MpiWorld& world, FailureWatch& watch, int num_stages, int num_microbatches,
          ActionTimer* timer, int first_world_rank = 0, int stride = 1);
  ~MpiLink() override;

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, Tensor tensor,
            const ActionMark& mark) override;
  [[nodiscard]] Tensor receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                               const ActionMark& mark) override;
  void abort() override { watch_.abort(); }

  // Waits until every send has left this process's buffers (the run's end).
  void flush() override;

 private:
  static constexpr int kMaxDims = 6;
  using Header = std::array<std::int64_t, 2 + kMaxDims>;  // type, rank of the shape, dims

  struct Pending {
    Header header{};
    Tensor tensor;
    std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  };

  [[nodiscard]] int tag_of(const MessageTag& tag) const;
  void reap();  // frees the sends MPI is done with

  const MpiWorld& world_;
  FailureWatch& watch_;
  int num_stages_;
  int num_microbatches_;
  ActionTimer* timer_;
  int first_world_rank_;
  int stride_;
  [[nodiscard]] int world_rank(schedules::Rank rank) const { return first_world_rank_ + rank.value * stride_; }
  std::list<Pending> pending_;  // stable addresses: MPI reads from them
};

}  // namespace gpipe::exec::mpi
