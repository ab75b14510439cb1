// One rank of a multi-process CUDA run: one process per rank and one GPU per
// process (its LOCAL_RANK), started by torchrun, mpirun or srun with the
// same command line (exec/dist/bootstrap.hpp reads where this process sits).
//
// - Rendezvous: rank 0 serves a TCP store on MASTER_ADDR:MASTER_PORT
//   (exec/dist/tcp_store.hpp) and shares NCCL's unique ids through it.
// - Messages: NCCL ncclSend/ncclRecv (nccl_device_link.hpp), on their own
//   communication streams, ordered with the compute stream by events.
// - Steps start together: every rank meets at the store's barrier before each
//   step (outside the timed part).
// - The measured intervals of every rank go through the store to the rank
//   that holds the loss stage, which alone reports: its result has the whole
//   timeline and the losses; the others' have their own part only. Each
//   process times from its own step start (after the barrier), so ranks on
//   different nodes are aligned to within the barrier's skew.
#pragma once

#include "exec/dist/bootstrap.hpp"
#include "exec/cuda/backend/cuda_trainer.hpp"

namespace gpipe::exec::cuda {

struct RankResult {
  CudaTrainResult result;
  bool reporter = false;  // this rank holds the loss stage and has the whole timeline
};

// Throws InputError when the launch does not fit the schedule (the world size
// is not the schedule's rank count), RunError when a rank or NCCL fails.
[[nodiscard]] RankResult train_cuda_rank(const TrainOptions& options,
                                         const CudaTrainOptions& cuda_options,
                                         const LaunchInfo& launch);

}  // namespace gpipe::exec::cuda
