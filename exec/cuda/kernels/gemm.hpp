// Row-major GEMMs on the device through cuBLASLt, the semantics of
// exec/cpu/ops/gemm.hpp: C[m,n] = alpha op(A) op(B) + beta C, every matrix
// row-major with its leading dimension. Three precisions:
//   fp32 in, fp32 out: CUBLAS_COMPUTE_32F_PEDANTIC (no TF32), for exactness checks;
//   bf16 in, fp32 out and bf16 in, bf16 out: CUBLAS_COMPUTE_32F (fp32 accumulation).
// A strided batch runs `count` such products at once, operand i at base +
// i * stride (the attention GEMMs, one per sample and head).
//
// cuBLASLt is column-major; a row-major product is the column-major product
// of the transposes with the operands swapped (C^T = op(B)^T op(A)^T), which
// column_major_gemm() works out as pure host arithmetic, tested without a GPU.
// No CUDA headers here (cuBLASLt's handle is the opaque cublasLtContext*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "exec/cpu/ops/gemm.hpp"
#include "exec/cuda/kernels/launch.hpp"

struct cublasLtContext;

namespace gpipe::exec::cuda {

using cpu::Transpose;

struct GemmBatch {
  std::int64_t count = 1;
  std::int64_t stride_a = 0;  // elements between consecutive A matrices
  std::int64_t stride_b = 0;
  std::int64_t stride_c = 0;
};

// One operand as cuBLASLt sees it: a column-major stored matrix and whether
// the product uses its transpose.
struct ColumnMajorOperand {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  bool transposed = false;
};

// The column-major problem D[rows_out, cols_out] = op(first) op(second) for a
// row-major call: first is B's memory, second is A's, out is C^T.
struct ColumnMajorGemm {
  std::int64_t m = 0;  // = row-major n
  std::int64_t n = 0;  // = row-major m
  std::int64_t k = 0;
  ColumnMajorOperand first;
  ColumnMajorOperand second;
  ColumnMajorOperand out;
};

// Throws std::invalid_argument on a negative size or a leading dimension
// shorter than its row-major row.
[[nodiscard]] ColumnMajorGemm column_major_gemm(Transpose trans_a, Transpose trans_b,
                                                std::int64_t m, std::int64_t n, std::int64_t k,
                                                std::int64_t lda, std::int64_t ldb,
                                                std::int64_t ldc);

// The largest power of two (at most 256) dividing `address` and, for a
// batch, the byte stride: what cuBLASLt's heuristic may assume of an operand.
[[nodiscard]] std::uint32_t operand_alignment(std::uintptr_t address, std::int64_t stride_bytes);

// A cuBLASLt handle and its workspace (device memory), created together and
// freed together. Not copyable; one per stream that runs GEMMs concurrently,
// since the workspace is shared by the calls made through it (and not used by
// two threads at once). It keeps, per GEMM shape, the descriptors and the
// algorithm the heuristic chose, so that a repeated GEMM costs one
// cublasLtMatmul call on the host: small models then measure the GPU, not
// the host building descriptors.
class BlasHandle {
 public:
  struct PlanCache;  // gemm.cpp: the shapes seen and their plans

  static constexpr std::size_t kDefaultWorkspaceBytes = std::size_t{32} << 20;  // Hopper's advice

  explicit BlasHandle(std::size_t workspace_bytes = kDefaultWorkspaceBytes);
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;

  [[nodiscard]] cublasLtContext* get() const { return handle_; }
  [[nodiscard]] void* workspace() const { return workspace_; }
  [[nodiscard]] std::size_t workspace_bytes() const { return workspace_bytes_; }
  [[nodiscard]] PlanCache& plans() { return *plans_; }
  // How many shapes have a plan (tests: a repeated GEMM adds none).
  [[nodiscard]] std::size_t planned_shapes() const;

 private:
  std::unique_ptr<PlanCache> plans_;
  cublasLtContext* handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

// fp32, pedantic fp32 compute (bitwise comparable in spirit to the CPU's sgemm).
void gemm(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
          std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda,
          const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          const GemmBatch& batch = {});

// bf16 operands, fp32 accumulation, fp32 output.
void gemm(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
          std::int64_t n, std::int64_t k, float alpha, const Bf16* a, std::int64_t lda,
          const Bf16* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          const GemmBatch& batch = {});

// bf16 operands, fp32 accumulation, bf16 output.
void gemm(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
          std::int64_t n, std::int64_t k, float alpha, const Bf16* a, std::int64_t lda,
          const Bf16* b, std::int64_t ldb, float beta, Bf16* c, std::int64_t ldc,
          const GemmBatch& batch = {});

}  // namespace gpipe::exec::cuda
