// The layer operations (ops.hpp) on the kernels of exec/cuda/kernels and the
// cuBLASLt GEMM of exec/cuda/kernels/gemm.hpp, fp32 (pedantic: no TF32).
#include "exec/cuda/layers/ops.hpp"

#include <cuda_runtime.h>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/attention.hpp"
#include "exec/cuda/kernels/bias.hpp"
#include "exec/cuda/kernels/embedding.hpp"
#include "exec/cuda/kernels/flash_attention.hpp"
#include "exec/cuda/kernels/gelu.hpp"
#include "exec/cuda/kernels/gemm.hpp"
#include "exec/cuda/kernels/layernorm.hpp"
#include "exec/cuda/kernels/losses.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

kernels::AttentionShape attention_shape(const AttentionDims& dims) {
  return kernels::AttentionShape{.batch = dims.batch,
                                 .seq = dims.seq,
                                 .hidden = dims.hidden,
                                 .heads = dims.heads,
                                 .kv_heads = dims.kv_heads,
                                 .causal = dims.causal};
}

}  // namespace

void linear_forward(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                    const float* x, const float* w, const float* bias, float* y, RawStream stream,
                    const float* residual) {
  if (residual == nullptr) {
    gemm(blas, stream, Transpose::no, Transpose::yes, rows, out, in, 1.0F, x, in, w, in, 0.0F, y,
         out);
    if (bias != nullptr) kernels::bias_add(rows, out, bias, y, stream);
    return;
  }
  // y = residual + bias, then the GEMM adds the product (beta 1), as the CPU's linear_forward.
  copy_device(y, residual, rows * out * static_cast<std::int64_t>(sizeof(float)), stream);
  if (bias != nullptr) kernels::bias_add(rows, out, bias, y, stream);
  gemm(blas, stream, Transpose::no, Transpose::yes, rows, out, in, 1.0F, x, in, w, in, 1.0F, y,
       out);
}

void linear_backward_input(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                           const float* w, const float* dy, float* dx, RawStream stream,
                           bool accumulate) {
  gemm(blas, stream, Transpose::no, Transpose::no, rows, in, out, 1.0F, dy, out, w, in,
       accumulate ? 1.0F : 0.0F, dx, in);
}

void linear_backward_weight(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                            const float* x, const float* dy, float* dw, float* dbias,
                            RawStream stream) {
  // dw[out,in] += dy[rows,out]^T x[rows,in]: beta 1 accumulates over micro-batches.
  gemm(blas, stream, Transpose::yes, Transpose::no, out, in, rows, 1.0F, dy, out, x, in, 1.0F, dw,
       in);
  if (dbias != nullptr) kernels::bias_backward(rows, out, dy, dbias, stream);
}

void linear_backward(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                     const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* dbias, RawStream stream) {
  if (dx != nullptr) linear_backward_input(blas, rows, in, out, w, dy, dx, stream);
  linear_backward_weight(blas, rows, in, out, x, dy, dw, dbias, stream);
}

void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats, RawStream stream) {
  kernels::layernorm_forward(rows, width, x, gamma, beta, y, stats, stream);
}

void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* stats,
                        const float* gamma, const float* dy, float* dx, float* dgamma,
                        float* dbeta, RawStream stream) {
  kernels::layernorm_backward(rows, width, x, stats, gamma, dy, dx, dgamma, dbeta, stream);
}

void gelu_forward(std::int64_t count, const float* x, float* y, RawStream stream) {
  kernels::gelu_forward(count, x, y, stream);
}

void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx,
                   RawStream stream) {
  kernels::gelu_backward(count, x, dy, dx, stream);
}

void residual_add(std::int64_t count, const float* a, const float* b, float* out,
                  RawStream stream) {
  kernels::residual_add(count, a, b, out, stream);
}

std::int64_t attention_forward_scratch_floats(const AttentionDims& dims) {
  return kernels::attention_forward_scratch_floats(attention_shape(dims));
}

std::int64_t attention_backward_scratch_floats(const AttentionDims& dims) {
  return kernels::attention_backward_scratch_floats(attention_shape(dims));
}

void attention_forward(BlasHandle& blas, const AttentionDims& dims, const float* qkv, float* probs,
                       float* out, float* scratch, RawStream stream) {
  kernels::attention_forward(blas, attention_shape(dims), qkv, probs, out, scratch, stream);
}

void attention_backward(BlasHandle& blas, const AttentionDims& dims, const float* qkv,
                        const float* probs, const float* dout, float* dqkv, float* scratch,
                        RawStream stream) {
  kernels::attention_backward(blas, attention_shape(dims), qkv, probs, dout, dqkv, scratch,
                              stream);
}

std::int64_t flash_attention_backward_scratch_floats(const AttentionDims& dims) {
  return kernels::flash_attention_backward_scratch_floats(attention_shape(dims));
}

void flash_attention_forward(const AttentionDims& dims, const float* qkv, float* out, float* lse,
                             RawStream stream) {
  kernels::flash_attention_forward(attention_shape(dims), qkv, out, lse, stream);
}

void flash_attention_backward(const AttentionDims& dims, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv, float* scratch,
                              RawStream stream) {
  kernels::flash_attention_backward(attention_shape(dims), qkv, out, lse, dout, dqkv, scratch,
                                    stream);
}

void embedding_forward(std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                       const std::int32_t* ids, const float* tok, const float* pos, float* out,
                       RawStream stream) {
  kernels::embedding_forward({batch, seq, hidden}, ids, tok, pos, out, stream);
}

void embedding_backward(std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                        const std::int32_t* ids, const float* dout, float* dtok, float* dpos,
                        RawStream stream) {
  kernels::embedding_backward({batch, seq, hidden}, ids, dout, dtok, dpos, stream);
}

void cross_entropy_forward(std::int64_t rows, std::int64_t vocab, float* logits,
                           const std::int32_t* targets, float* loss, RawStream stream) {
  kernels::cross_entropy_forward(rows, vocab, logits, targets, loss, stream);
}

void cross_entropy_backward(std::int64_t rows, std::int64_t vocab, const float* probs,
                            const std::int32_t* targets, const float* scale, float* dlogits,
                            RawStream stream) {
  kernels::cross_entropy_backward(rows, vocab, probs, targets, scale, dlogits, stream);
}

void mse_forward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                 float* loss, RawStream stream) {
  kernels::mse_forward(batch, width, x, target, loss, stream);
}

void mse_backward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                  const float* grad_loss, float* dx, RawStream stream) {
  kernels::mse_backward(batch, width, x, target, grad_loss, dx, stream);
}

void copy_device(void* to, const void* from, std::int64_t bytes, RawStream stream) {
  if (bytes == 0) return;
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(to, from, static_cast<std::size_t>(bytes),
                                   cudaMemcpyDeviceToDevice, stream));
}

void copy_rows(float* to, std::int64_t to_stride, const float* from, std::int64_t from_stride,
               std::int64_t width, std::int64_t rows, RawStream stream) {
  if (width == 0 || rows == 0) return;
  constexpr auto kFloat = static_cast<std::int64_t>(sizeof(float));
  GPIPE_CUDA_CHECK(cudaMemcpy2DAsync(to, static_cast<std::size_t>(to_stride * kFloat), from,
                                     static_cast<std::size_t>(from_stride * kFloat),
                                     static_cast<std::size_t>(width * kFloat),
                                     static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice,
                                     stream));
}

}  // namespace gpipe::exec::cuda::layers
