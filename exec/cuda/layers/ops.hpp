// The device operations the CUDA layers are made of, over raw device pointers
// and the raw stream handle: a Linear (cuBLASLt GEMM + bias), LayerNorm, GELU,
// residual add, attention, embedding, the losses, the per-sample mean over
// positions, and a device-to-device copy. The same contracts as the CPU
// functions the CPU layers call (exec/cpu/ops/linear.hpp and friends).
//
// The layers (which hold DeviceTensors) call these; ops.cpp maps them onto the
// kernel launchers (exec/cuda/kernels/) and cuBLASLt (exec/cuda/kernels/gemm.hpp), so
// the layer files read like their CPU twins.
#pragma once

#include <cstdint>

struct CUstream_st;

namespace gpipe::exec::cuda {

class BlasHandle;

namespace layers {

using RawStream = CUstream_st*;  // cudaStream_t

// y[rows,out] = x[rows,in] W[out,in]^T + bias[out] (bias may be null).
void linear_forward(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                    const float* x, const float* w, const float* bias, float* y, RawStream stream);
// dx = dy W (overwritten), dw += dy^T x, dbias += column sums of dy (dbias may be null).
void linear_backward(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                     const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* dbias, RawStream stream);

void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats, RawStream stream);
// Adds into dx, dgamma and dbeta.
void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* stats,
                        const float* gamma, const float* dy, float* dx, float* dgamma,
                        float* dbeta, RawStream stream);

void gelu_forward(std::int64_t count, const float* x, float* y, RawStream stream);
// dx = dy * gelu'(x), overwritten; dx may be dy.
void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx,
                   RawStream stream);

// out = a + b; out may alias a or b.
void residual_add(std::int64_t count, const float* a, const float* b, float* out,
                  RawStream stream);

struct AttentionDims {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
};
[[nodiscard]] std::int64_t attention_forward_scratch_floats(const AttentionDims& dims);
[[nodiscard]] std::int64_t attention_backward_scratch_floats(const AttentionDims& dims);
void attention_forward(BlasHandle& blas, const AttentionDims& dims, const float* qkv, float* probs,
                       float* out, float* scratch, RawStream stream);
void attention_backward(BlasHandle& blas, const AttentionDims& dims, const float* qkv,
                        const float* probs, const float* dout, float* dqkv, float* scratch,
                        RawStream stream);

void embedding_forward(std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                       const std::int32_t* ids, const float* tok, const float* pos, float* out,
                       RawStream stream);
void embedding_backward(std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                        const std::int32_t* ids, const float* dout, float* dtok, float* dpos,
                        RawStream stream);

void cross_entropy_forward(std::int64_t rows, std::int64_t vocab, float* logits,
                           const std::int32_t* targets, float* loss, RawStream stream);
void cross_entropy_backward(std::int64_t rows, std::int64_t vocab, const float* probs,
                            const std::int32_t* targets, const float* scale, float* dlogits,
                            RawStream stream);
void mse_forward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                 float* loss, RawStream stream);
void mse_backward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                  const float* grad_loss, float* dx, RawStream stream);

// lm_head's reductions over the S positions of each sample, as the CPU does
// them: out[n] = (float)(sum_s in[n, s] in double / S), and
// row_scale[n, s] = g[n] / (float)S.
void position_mean(std::int64_t batch, std::int64_t seq, const float* in, float* out,
                   RawStream stream);
void position_scale(std::int64_t batch, std::int64_t seq, const float* g, float* row_scale,
                    RawStream stream);

// `bytes` from device `from` to device `to`, on the stream.
void copy_device(void* to, const void* from, std::int64_t bytes, RawStream stream);

}  // namespace layers
}  // namespace gpipe::exec::cuda
