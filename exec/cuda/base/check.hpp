// One checking macro per CUDA library: each names the call and its source
// location, so a failure reads "cudaMalloc(&p, bytes) failed at
// exec/cuda/allocator.cpp:42: out of memory". They throw gpipe::RunError (exit
// status 1): a well-formed request this machine could not carry out.
#pragma once

#include <string>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <nccl.h>

namespace gpipe::exec::cuda {

[[noreturn]] void throw_cuda_error(const char* call, const char* file, int line, const std::string& what);

}  // namespace gpipe::exec::cuda

#define GPIPE_CUDA_CHECK(call)                                                            \
  do {                                                                                    \
    const cudaError_t gpipe_status_ = (call);                                             \
    if (gpipe_status_ != cudaSuccess)                                                     \
      ::gpipe::exec::cuda::throw_cuda_error(#call, __FILE__, __LINE__,                    \
                                            cudaGetErrorString(gpipe_status_));           \
  } while (0)

#define GPIPE_CUBLAS_CHECK(call)                                                          \
  do {                                                                                    \
    const cublasStatus_t gpipe_status_ = (call);                                          \
    if (gpipe_status_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::gpipe::exec::cuda::throw_cuda_error(#call, __FILE__, __LINE__,                    \
                                            cublasGetStatusString(gpipe_status_));        \
  } while (0)

#define GPIPE_NCCL_CHECK(call)                                                            \
  do {                                                                                    \
    const ncclResult_t gpipe_status_ = (call);                                            \
    if (gpipe_status_ != ncclSuccess)                                                     \
      ::gpipe::exec::cuda::throw_cuda_error(#call, __FILE__, __LINE__,                    \
                                            ncclGetErrorString(gpipe_status_));           \
  } while (0)

#define GPIPE_CUPTI_CHECK(call)                                                           \
  do {                                                                                    \
    const CUptiResult gpipe_status_ = (call);                                             \
    if (gpipe_status_ != CUPTI_SUCCESS) {                                                 \
      const char* gpipe_text_ = nullptr;                                                  \
      cuptiGetResultString(gpipe_status_, &gpipe_text_);                                  \
      ::gpipe::exec::cuda::throw_cuda_error(#call, __FILE__, __LINE__,                    \
                                            gpipe_text_ ? gpipe_text_ : "CUPTI error");   \
    }                                                                                     \
  } while (0)
