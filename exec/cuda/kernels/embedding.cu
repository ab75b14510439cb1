// Embedding gather and scatter-add (see embedding.hpp); one thread per element
// of out. Without a position table (token_embedding) the gather is a copy.
#include "exec/cuda/kernels/embedding.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void embedding_forward_kernel(EmbeddingShape shape, const std::int32_t* ids,
                                         const float* tok, const float* pos, float* out) {
  const std::int64_t count = shape.batch * shape.seq * shape.hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const std::int64_t token = i / shape.hidden;
    const std::int64_t j = i % shape.hidden;
    const float t = tok[static_cast<std::int64_t>(ids[token]) * shape.hidden + j];
    out[i] = pos == nullptr ? t : t + pos[(token % shape.seq) * shape.hidden + j];
  }
}

__global__ void embedding_backward_kernel(EmbeddingShape shape, const std::int32_t* ids,
                                          const float* dout, float* dtok, float* dpos) {
  const std::int64_t count = shape.batch * shape.seq * shape.hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const std::int64_t token = i / shape.hidden;
    const std::int64_t j = i % shape.hidden;
    atomicAdd(dtok + static_cast<std::int64_t>(ids[token]) * shape.hidden + j, dout[i]);
    if (dpos != nullptr) atomicAdd(dpos + (token % shape.seq) * shape.hidden + j, dout[i]);
  }
}

std::int64_t checked_count(const EmbeddingShape& shape) {
  check_size("batch", shape.batch);
  check_size("seq", shape.seq);
  check_size("hidden", shape.hidden);
  return shape.batch * shape.seq * shape.hidden;
}

}  // namespace

void embedding_forward(const EmbeddingShape& shape, const std::int32_t* ids, const float* tok,
                       const float* pos, float* out, StreamHandle stream) {
  const std::int64_t count = checked_count(shape);
  if (count == 0) return;
  embedding_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, ids, tok, pos,
                                                                               out);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward(const EmbeddingShape& shape, const std::int32_t* ids, const float* dout,
                        float* dtok, float* dpos, StreamHandle stream) {
  const std::int64_t count = checked_count(shape);
  if (count == 0) return;
  embedding_backward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, ids, dout,
                                                                                dtok, dpos);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
