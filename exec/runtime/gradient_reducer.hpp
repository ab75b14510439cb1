// The data-parallel reduction of a stage's gradients (docs/design.md "Data
// parallelism"): D replicas of the pipeline each compute a share of the
// mini-batch, and before STEP(s) every replica's stage s holds the sum of
// their gradients. REDUCE_GRAD(s) starts the sum over the stage's group (the
// same stage of every replica) once its gradients are final; the rank goes on
// computing while it runs; WAIT_REDUCE_GRAD(s) waits for it. What carries it
// is the backend's: MPI's all-reduce between CPU processes
// (exec/mpi/mpi_gradient_reducer.hpp), NCCL's between GPUs
// (exec/cuda/nccl/nccl_gradient_reducer.hpp). Either sees a reduction end
// only when polled (between the rank's actions, and at the wait).
#pragma once

#include <chrono>
#include <vector>

#include "schedules/ids.hpp"

namespace gpipe::exec {

template <class Tensor>
class GradientReducer {
 public:
  using Clock = std::chrono::steady_clock;

  // When a reduction could start (the last member of the group had started
  // it) and when this process saw it end.
  struct Times {
    Clock::time_point start;
    Clock::time_point end;
  };

  virtual ~GradientReducer() = default;
  // Starts summing `gradients` (the stage's, which stay alive and untouched
  // until wait) over the group. One reduction per stage at a time. Under
  // ZeRO 1 a reduce-scatter: after wait, only the runs this replica owns
  // (zero_shards.hpp) hold the sums, and the rest of each gradient is spent.
  virtual void start(schedules::Stage stage, std::vector<Tensor*> gradients) = 0;
  // Lets the started reductions move on and notes the moment each ends: the
  // worker calls it between actions.
  virtual void progress() = 0;
  // Waits until the stage's reduction has ended; its sums are then in the
  // gradients. Throws Aborted when the run is aborted meanwhile.
  virtual Times wait(schedules::Stage stage) = 0;
  // `value` summed over the group, in every member: the loss stage's share
  // of a step's loss, over the replicas.
  virtual double sum(double value) = 0;
  // `tensor` summed over the group in place, returning once it is: a tied
  // embedding's gradient from the other end of this replica's pipeline,
  // which STEP adds to this end's summed one.
  virtual void sum_in_place(Tensor& tensor) = 0;
  // ZeRO 1: every replica's runs of `values` (the stage's weights, each
  // replica's share just updated) copied into every replica, returning once
  // they are.
  virtual void gather(schedules::Stage stage, std::vector<Tensor*> values) = 0;
  // Ends every wait (another rank failed).
  virtual void abort() = 0;
};

}  // namespace gpipe::exec
