// Data-parallel gradient reduction between GPU processes over NCCL (the seam
// of exec/runtime/gradient_reducer.hpp), as exec/mpi/mpi_gradient_reducer.hpp
// does it between CPU processes: each gradient tensor summed in place over
// the stage's group, in pieces of at most the bucket (exec/runtime/
// reduction_pieces.hpp), one ncclAllReduce each, in one NCCL group. They run
// on a reduction stream of their own, ordered after the rank's compute
// stream (the gradients are final there), so the GPU overlaps them with the
// rest of the rank's work, as the simulator's reduce stream does;
// WAIT_REDUCE_GRAD orders the compute stream after them and, to note when
// they ended (Times), waits for them on the host: the STEP it precedes
// needs them anyway. A reduction's start is this process's, when it
// enqueued it (the MPI reducer takes the last replica's; here the GPU's own
// start would need the device timer's events). Its communicator is
// non-blocking, as NcclTransport's are: every call is polled, so an abort or
// a peer that never comes ends a wait instead of hanging it.
//
// fp32 gradients only (the CUDA backend's weights and gradients are fp32).
// Built wherever CUDA is; running it waits for a machine with several GPUs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "exec/cuda/base/device_tensor.hpp"
#include "exec/runtime/gradient_reducer.hpp"

namespace gpipe::exec::cuda {

// One communicator's unique id, serialized (NCCL_UNIQUE_ID_BYTES bytes), for
// the group's rank 0 to make and share.
[[nodiscard]] std::string make_nccl_group_id();

class NcclGradientReducer final : public GradientReducer<DeviceTensor> {
 public:
  // Joins the group as `rank` of `size` (waiting at most `join_timeout`) on
  // `device`, whose work for this rank runs on `compute`. Throws InputError
  // for a malformed rank or id, RunError when NCCL fails or the group does
  // not form in time.
  NcclGradientReducer(int rank, int size, int device, const std::string& id, cudaStream_t compute,
                      std::int64_t bucket_bytes, std::chrono::milliseconds join_timeout = std::chrono::minutes(5));
  ~NcclGradientReducer() override;
  NcclGradientReducer(const NcclGradientReducer&) = delete;
  NcclGradientReducer& operator=(const NcclGradientReducer&) = delete;

  void start(schedules::Stage stage, std::vector<DeviceTensor*> gradients) override;
  void progress() override;
  Times wait(schedules::Stage stage) override;
  double sum(double value) override;
  void sum_in_place(DeviceTensor& tensor) override;
  // ZeRO runs on the cpu backend only (exec/dist/train_as_process.hpp refuses
  // it with --backend cuda).
  void gather(schedules::Stage /*stage*/, std::vector<DeviceTensor*> /*values*/) override {
    throw std::logic_error("ZeRO's weight gather is not run over NCCL yet");
  }
  void abort() override { abort_requested_.store(true, std::memory_order_release); }

 private:
  struct Pending {
    cudaEvent_t done = nullptr;  // recorded on the reduction stream after its all-reduces
    Clock::time_point start;
    Clock::time_point end;
    bool ended = false;
  };

  // Polls an NCCL call issued on the non-blocking communicator to completion.
  void complete(ncclResult_t issued, const char* what);
  // One poll of a wait: throws Aborted after abort(), RunError when NCCL
  // reported a failure (a peer gone), else yields.
  void poll_once();
  // Whether `p`'s all-reduces have run (querying its event); notes its end.
  bool test(Pending& p);
  void throw_if_aborted();

  int rank_;
  int size_;
  cudaStream_t compute_;
  cudaStream_t stream_ = nullptr;  // the reductions'
  ncclComm_t comm_ = nullptr;
  std::int64_t bucket_floats_;
  std::map<int, Pending> pending_;  // by stage
  std::atomic<bool> abort_requested_{false};
  bool aborted_ = false;
};

}  // namespace gpipe::exec::cuda
