#include "exec/cuda/kernels/attention.hpp"

#include <cmath>
#include <stdexcept>

#include "exec/cuda/kernels/heads.hpp"
#include "exec/cuda/kernels/softmax.hpp"

namespace gpipe::exec::cuda::kernels {

namespace {

// out and dout: [b, S, A d] <-> [b, A, S, d].
HeadLayout output_layout(const AttentionShape& shape) {
  return HeadLayout{shape.batch, shape.seq, shape.heads, shape.head_dim(), 1};
}

// One strided-batched GEMM over the b*A (sample, head) matrices; each operand
// is [rows, ld] contiguous per matrix, so its stride is rows * ld.
struct Batched {
  BlasHandle& blas;
  StreamHandle stream;
  std::int64_t count;
  void operator()(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                  float alpha, const float* a, std::int64_t lda, std::int64_t stride_a,
                  const float* b, std::int64_t ldb, std::int64_t stride_b, float* c,
                  std::int64_t ldc, std::int64_t stride_c) const {
    gemm(blas, stream, ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0F, c, ldc,
         GemmBatch{count, stride_a, stride_b, stride_c});
  }
};

}  // namespace

void check_attention_shape(const AttentionShape& shape) {
  if (shape.batch < 0 || shape.seq < 0 || shape.hidden < 0 || shape.heads <= 0 ||
      shape.hidden % shape.heads != 0 || shape.kv_heads < 0 ||
      shape.heads % shape.kv_groups() != 0) {
    throw std::invalid_argument("attention: bad shape (batch " + std::to_string(shape.batch) +
                                ", seq " + std::to_string(shape.seq) + ", hidden " +
                                std::to_string(shape.hidden) + ", heads " +
                                std::to_string(shape.heads) + ", kv_heads " +
                                std::to_string(shape.kv_heads) + ")");
  }
}

std::int64_t attention_forward_scratch_floats(const AttentionShape& shape) {
  check_attention_shape(shape);
  return 4 * shape.batch * shape.seq * shape.hidden;
}

std::int64_t attention_backward_scratch_floats(const AttentionShape& shape) {
  check_attention_shape(shape);
  return 7 * shape.batch * shape.seq * shape.hidden +
         shape.batch * shape.heads * shape.seq * shape.seq;
}

void attention_forward(BlasHandle& blas, const AttentionShape& shape, const float* qkv,
                       float* probs, float* out, float* scratch, StreamHandle stream) {
  check_attention_shape(shape);
  const std::int64_t s = shape.seq;
  const std::int64_t d = shape.head_dim();
  const std::int64_t bsh = shape.batch * s * shape.hidden;
  if (bsh == 0) return;
  float* q = scratch;
  float* k = q + bsh;
  float* v = k + bsh;
  float* out_heads = v + bsh;
  split_qkv(shape, qkv, q, k, v, stream);
  const Batched batched{blas, stream, shape.batch * shape.heads};
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  // Scores = scale q k^T, the full S x S (the causal mask applied after).
  batched(Transpose::no, Transpose::yes, s, s, d, scale, q, d, s * d, k, d, s * d, probs, s, s * s);
  attention_softmax_forward(shape.batch * shape.heads, s, shape.causal, probs, stream);
  batched(Transpose::no, Transpose::no, s, d, s, 1.0F, probs, s, s * s, v, d, s * d, out_heads, d,
          s * d);
  merge_heads(output_layout(shape), out_heads, out, stream);
}

void attention_backward(BlasHandle& blas, const AttentionShape& shape, const float* qkv,
                        const float* probs, const float* dout, float* dqkv, float* scratch,
                        StreamHandle stream) {
  check_attention_shape(shape);
  const std::int64_t s = shape.seq;
  const std::int64_t d = shape.head_dim();
  const std::int64_t bsh = shape.batch * s * shape.hidden;
  if (bsh == 0) return;
  float* q = scratch;
  float* k = q + bsh;
  float* v = k + bsh;
  float* dout_heads = v + bsh;
  float* dq = dout_heads + bsh;
  float* dk = dq + bsh;
  float* dv = dk + bsh;
  float* dp = dv + bsh;
  split_qkv(shape, qkv, q, k, v, stream);
  split_heads(output_layout(shape), dout, dout_heads, stream);
  const Batched batched{blas, stream, shape.batch * shape.heads};
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  // dP = dout v^T, dv = P^T dout.
  batched(Transpose::no, Transpose::yes, s, s, d, 1.0F, dout_heads, d, s * d, v, d, s * d, dp, s,
          s * s);
  batched(Transpose::yes, Transpose::no, s, d, s, 1.0F, probs, s, s * s, dout_heads, d, s * d, dv,
          d, s * d);
  attention_softmax_backward(shape.batch * shape.heads, s, shape.causal, probs, dp, stream);
  // dq = scale dS k, dk = scale dS^T q.
  batched(Transpose::no, Transpose::no, s, d, s, scale, dp, s, s * s, k, d, s * d, dq, d, s * d);
  batched(Transpose::yes, Transpose::no, s, d, s, scale, dp, s, s * s, q, d, s * d, dk, d, s * d);
  // dk and dv per query head; a kv head's gradient is its group's sum.
  merge_qkv_gradients(shape, dq, dk, dv, dqkv, stream);
}

}  // namespace gpipe::exec::cuda::kernels
