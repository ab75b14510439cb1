// The device operations the CUDA layers are made of, over raw device pointers
// and the raw stream handle: a Linear (cuBLASLt GEMM + bias, its backward
// whole or in halves), LayerNorm (with or without affine), RMSNorm, GELU,
// SiLU and SwiGLU, the rotary embedding, DiT's modulation and conditioning,
// residual add, attention (naive or flash), embedding, the losses, the
// per-sample mean over positions, and device-to-device copies. The same
// contracts as the CPU functions the CPU layers call (exec/cpu/ops/linear.hpp
// and friends).
//
// The layers (which hold DeviceTensors) call these; ops.cpp maps them onto the
// kernel launchers (exec/cuda/kernels/) and cuBLASLt (exec/cuda/kernels/gemm.hpp), so
// the layer files read like their CPU twins. The launchers that already have
// the layers' signature (raw pointers, a stream last) are used as they are:
// the using-declarations below.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/dit_condition.hpp"
#include "exec/cuda/kernels/modulation.hpp"
#include "exec/cuda/kernels/rmsnorm.hpp"
#include "exec/cuda/kernels/rope.hpp"
#include "exec/cuda/kernels/swiglu.hpp"

struct CUstream_st;

namespace gpipe::exec::cuda {

class BlasHandle;

namespace layers {

using RawStream = CUstream_st*;  // cudaStream_t

// y[rows,out] = x[rows,in] W[out,in]^T + bias[out] + residual[rows,out] (bias
// and residual may be null). With a residual, y is seeded with it and the
// bias and the GEMM adds the product, as exec/cpu/ops/linear.cpp does.
void linear_forward(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                    const float* x, const float* w, const float* bias, float* y, RawStream stream,
                    const float* residual = nullptr);
// dx = dy W (overwritten, or added with accumulate), the input half of the backward.
void linear_backward_input(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                           const float* w, const float* dy, float* dx, RawStream stream,
                           bool accumulate = false);
// dw += dy^T x, dbias += column sums of dy (dbias may be null): the weight half.
void linear_backward_weight(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                            const float* x, const float* dy, float* dw, float* dbias,
                            RawStream stream);
// Both halves, the input's first (dx may be null: no input gradient).
void linear_backward(BlasHandle& blas, std::int64_t rows, std::int64_t in, std::int64_t out,
                     const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* dbias, RawStream stream);

// gamma and beta both null: no affine (DiT's norms).
void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats, RawStream stream);
// Adds into dx, dgamma and dbeta; gamma, dgamma and dbeta all null: no affine.
void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* stats,
                        const float* gamma, const float* dy, float* dx, float* dgamma,
                        float* dbeta, RawStream stream);

// RMSNorm (rstd [rows]; the backward adds into dx and dgamma), SiLU and
// SwiGLU, the rotary embedding (in place, on q or k inside a packed qkv),
// DiT's modulation and gated residual, its timestep features and label rows.
using kernels::rmsnorm_backward;
using kernels::rmsnorm_forward;
using kernels::silu_backward;
using kernels::silu_forward;
using kernels::swiglu_backward;
using kernels::swiglu_forward;
using kernels::RopeShape;
using kernels::rope_backward;
using kernels::rope_forward;
using kernels::ModulationShape;
using kernels::gated_residual_backward;
using kernels::gated_residual_forward;
using kernels::modulate_backward;
using kernels::modulate_forward;
using kernels::LabelRows;
using kernels::label_rows_backward;
using kernels::label_rows_forward;
using kernels::timestep_embedding;

void gelu_forward(std::int64_t count, const float* x, float* y, RawStream stream);
// dx = dy * gelu'(x), overwritten; dx may be dy.
void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx,
                   RawStream stream);

// out = a + b; out may alias a or b.
void residual_add(std::int64_t count, const float* a, const float* b, float* out,
                  RawStream stream);

// exec/cpu/ops/attention.hpp's AttentionShape: A query heads sharing G kv
// heads (0: G = A), qkv [b, S, (A+2G)d], causal or not.
struct AttentionDims {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  bool causal = true;
};
// Naive attention: P [b, A, S, S] kept.
[[nodiscard]] std::int64_t attention_forward_scratch_floats(const AttentionDims& dims);
[[nodiscard]] std::int64_t attention_backward_scratch_floats(const AttentionDims& dims);
void attention_forward(BlasHandle& blas, const AttentionDims& dims, const float* qkv, float* probs,
                       float* out, float* scratch, RawStream stream);
void attention_backward(BlasHandle& blas, const AttentionDims& dims, const float* qkv,
                        const float* probs, const float* dout, float* dqkv, float* scratch,
                        RawStream stream);
// Flash attention: lse [b, A, S] kept; the backward reads the forward's out.
[[nodiscard]] std::int64_t flash_attention_backward_scratch_floats(const AttentionDims& dims);
void flash_attention_forward(const AttentionDims& dims, const float* qkv, float* out, float* lse,
                             RawStream stream);
void flash_attention_backward(const AttentionDims& dims, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv, float* scratch,
                              RawStream stream);

// pos (and dpos) null: token_embedding's gather without a position table.
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
// `rows` runs of `width` floats, from_stride floats apart in `from`, to_stride
// apart in `to`: DiT's [b, T+1, H] tensors to and from their [b, T, H] tokens
// and [b, H] conditioning rows.
void copy_rows(float* to, std::int64_t to_stride, const float* from, std::int64_t from_stride,
               std::int64_t width, std::int64_t rows, RawStream stream);

}  // namespace layers
}  // namespace gpipe::exec::cuda
