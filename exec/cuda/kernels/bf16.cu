// fp32 <-> bf16 conversion kernels (declared in bf16.hpp).
#include <cuda_bf16.h>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/bf16.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void f32_to_bf16_kernel(std::int64_t count, const float* src, __nv_bfloat16* dst) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads())
    dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void bf16_to_f32_kernel(std::int64_t count, const __nv_bfloat16* src, float* dst) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads())
    dst[i] = __bfloat162float(src[i]);
}

}  // namespace

void f32_to_bf16(std::int64_t count, const float* src, Bf16* dst, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  f32_to_bf16_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(
      count, src, reinterpret_cast<__nv_bfloat16*>(dst));
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void bf16_to_f32(std::int64_t count, const Bf16* src, float* dst, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  bf16_to_f32_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(
      count, reinterpret_cast<const __nv_bfloat16*>(src), dst);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
