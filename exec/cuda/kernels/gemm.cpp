#include "exec/cuda/kernels/gemm.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

namespace {

void check_nonnegative(const char* what, std::int64_t value) {
  if (value < 0) throw std::invalid_argument("gemm: negative " + std::string(what));
}

void check_ld(const char* what, std::int64_t ld, std::int64_t row_length) {
  if (ld < (row_length > 1 ? row_length : 1)) {
    throw std::invalid_argument("gemm: " + std::string(what) + " " + std::to_string(ld) +
                                " is shorter than the row-major row of " +
                                std::to_string(row_length));
  }
}

// The column-major operand whose op() is [op_rows, op_cols]: a row-major
// matrix read column-major is its own transpose, so an untransposed row-major
// operand is stored [op_rows, op_cols] and used as is, a transposed one is
// stored [op_cols, op_rows] and used transposed.
ColumnMajorOperand swapped(std::int64_t op_rows, std::int64_t op_cols, std::int64_t ld,
                           Transpose t) {
  return t == Transpose::no ? ColumnMajorOperand{op_rows, op_cols, ld, false}
                            : ColumnMajorOperand{op_cols, op_rows, ld, true};
}

struct MatmulDescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, MatmulDescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

Layout make_layout(cudaDataType type, const ColumnMajorOperand& op, std::int64_t batch,
                   std::int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  GPIPE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<std::uint64_t>(op.rows),
                                                static_cast<std::uint64_t>(op.cols), op.ld));
  Layout layout(raw);
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    GPIPE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &count, sizeof(count)));
    GPIPE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

// The matmul descriptor for `compute`, or null where this cuBLASLt rejects
// that compute type (so the caller can fall back to another).
MatmulDesc make_desc(cublasComputeType_t compute, const ColumnMajorGemm& p) {
  cublasLtMatmulDesc_t raw_desc = nullptr;
  const cublasStatus_t status = cublasLtMatmulDescCreate(&raw_desc, compute, CUDA_R_32F);
  if (status == CUBLAS_STATUS_INVALID_VALUE || status == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  GPIPE_CUBLAS_CHECK(status);
  MatmulDesc desc(raw_desc);
  const cublasOperation_t op_first = p.first.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.second.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  GPIPE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                    &op_first, sizeof(op_first)));
  GPIPE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                    &op_second, sizeof(op_second)));
  return desc;
}

struct Operands {
  cudaDataType ab_type;
  cudaDataType c_type;
  cublasComputeType_t compute;
  cublasComputeType_t fallback_compute;
  std::size_t ab_bytes;
  std::size_t c_bytes;
  const void* a;
  const void* b;
  void* c;
};

// Everything that decides a GEMM's descriptors and algorithm.
using PlanKey = std::array<std::int64_t, 18>;

// The descriptors of one GEMM shape and the algorithm chosen for it.
struct GemmPlan {
  MatmulDesc desc;
  Layout first;
  Layout second;
  Layout out;
  cublasLtMatmulAlgo_t algo{};
};

}  // namespace

struct BlasHandle::PlanCache {
  std::map<PlanKey, GemmPlan> plans;
};

namespace {

// Asks cuBLASLt for the descriptors and algorithm of a new shape.
GemmPlan make_plan(BlasHandle& blas, const ColumnMajorGemm& p, const GemmBatch& batch, const Operands& ops,
                   std::uint32_t align_first, std::uint32_t align_second, std::uint32_t align_out) {
  GemmPlan plan;
  // cuBLASLt's A is our B and its B our A (see gemm.hpp).
  plan.first = make_layout(ops.ab_type, p.first, batch.count, batch.stride_b);
  plan.second = make_layout(ops.ab_type, p.second, batch.count, batch.stride_a);
  plan.out = make_layout(ops.c_type, p.out, batch.count, batch.stride_c);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  GPIPE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  const Preference pref(raw_pref);
  const std::uint64_t workspace = blas.workspace_bytes();
  GPIPE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  GPIPE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first, sizeof(align_first)));
  GPIPE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second, sizeof(align_second)));
  GPIPE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_out, sizeof(align_out)));
  GPIPE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_out, sizeof(align_out)));

  // fp32 asks for the pedantic compute type (no TF32, no reduced-precision
  // shortcuts); where no algorithm offers it, plain COMPUTE_32F, which in
  // cuBLASLt also never uses TF32 (that takes COMPUTE_32F_FAST_TF32).
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  for (const cublasComputeType_t compute : {ops.compute, ops.fallback_compute}) {
    plan.desc = make_desc(compute, p);
    if (!plan.desc) continue;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(blas.get(), plan.desc.get(), plan.first.get(), plan.second.get(),
                                       plan.out.get(), plan.out.get(), raw_pref, 1, &heuristic, &found);
    if (status == CUBLAS_STATUS_SUCCESS && found > 0) break;
    if (status != CUBLAS_STATUS_NOT_SUPPORTED && status != CUBLAS_STATUS_SUCCESS) {
      GPIPE_CUBLAS_CHECK(status);
    }
    found = 0;
  }
  if (found == 0 || !plan.desc) {
    throw_cuda_error("cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__,
                     "no algorithm for this GEMM (" + std::to_string(p.n) + "x" + std::to_string(p.m) + "x" +
                         std::to_string(p.k) + ")");
  }
  plan.algo = heuristic.algo;
  return plan;
}

void matmul(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
            std::int64_t n, std::int64_t k, float alpha, std::int64_t lda, std::int64_t ldb,
            float beta, std::int64_t ldc, const GemmBatch& batch, const Operands& ops) {
  const ColumnMajorGemm p = column_major_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  check_nonnegative("batch count", batch.count);
  if (m == 0 || n == 0 || batch.count == 0) return;
  if (k == 0) throw std::invalid_argument("gemm: k = 0 is not supported on the device");
  if (batch.count > INT32_MAX) throw std::invalid_argument("gemm: batch count over 2^31");

  const bool batched = batch.count > 1;
  const auto stride_bytes = [&](std::int64_t stride, std::size_t bytes) {
    return batched ? stride * static_cast<std::int64_t>(bytes) : 0;
  };
  // The operands' alignment is part of the shape: the chosen algorithm may rely on it.
  const std::uint32_t align_first = operand_alignment(reinterpret_cast<std::uintptr_t>(ops.b),
                                                      stride_bytes(batch.stride_b, ops.ab_bytes));
  const std::uint32_t align_second = operand_alignment(reinterpret_cast<std::uintptr_t>(ops.a),
                                                       stride_bytes(batch.stride_a, ops.ab_bytes));
  const std::uint32_t align_out = operand_alignment(reinterpret_cast<std::uintptr_t>(ops.c),
                                                    stride_bytes(batch.stride_c, ops.c_bytes));
  const PlanKey key{ops.ab_type,     ops.c_type,     ops.compute,     static_cast<std::int64_t>(trans_a),
                    static_cast<std::int64_t>(trans_b),
                    m,               n,              k,               lda,
                    ldb,             ldc,            batch.count,     batched ? batch.stride_a : 0,
                    batched ? batch.stride_b : 0,    batched ? batch.stride_c : 0,
                    align_first,     align_second,   align_out};
  auto& plans = blas.plans().plans;
  auto found = plans.find(key);
  if (found == plans.end()) {
    found = plans.emplace(key, make_plan(blas, p, batch, ops, align_first, align_second, align_out)).first;
  }
  const GemmPlan& plan = found->second;
  // C and D are the same matrix: beta C is read, the result written in place.
  GPIPE_CUBLAS_CHECK(cublasLtMatmul(blas.get(), plan.desc.get(), &alpha, ops.b, plan.first.get(), ops.a,
                                    plan.second.get(), &beta, ops.c, plan.out.get(), ops.c, plan.out.get(),
                                    &plan.algo, blas.workspace(), blas.workspace_bytes(), stream));
}

}  // namespace

ColumnMajorGemm column_major_gemm(Transpose trans_a, Transpose trans_b, std::int64_t m,
                                  std::int64_t n, std::int64_t k, std::int64_t lda,
                                  std::int64_t ldb, std::int64_t ldc) {
  check_nonnegative("m", m);
  check_nonnegative("n", n);
  check_nonnegative("k", k);
  // Row-major A is [m,k] (or [k,m] when transposed), B [k,n] (or [n,k]), C [m,n].
  check_ld("lda", lda, trans_a == Transpose::no ? k : m);
  check_ld("ldb", ldb, trans_b == Transpose::no ? n : k);
  check_ld("ldc", ldc, n);
  ColumnMajorGemm p;
  p.m = n;
  p.n = m;
  p.k = k;
  // first = B^T-view: op(first) must be [n,k] column-major.
  p.first = swapped(n, k, ldb, trans_b);
  // second = A^T-view: op(second) must be [k,m] column-major.
  p.second = swapped(k, m, lda, trans_a);
  p.out = ColumnMajorOperand{n, m, ldc, false};
  return p;
}

std::uint32_t operand_alignment(std::uintptr_t address, std::int64_t stride_bytes) {
  std::uint32_t alignment = 256;
  while (alignment > 1 &&
         (address % alignment != 0 || stride_bytes % static_cast<std::int64_t>(alignment) != 0)) {
    alignment /= 2;
  }
  return alignment;
}

BlasHandle::BlasHandle(std::size_t workspace_bytes)
    : plans_(std::make_unique<PlanCache>()), workspace_bytes_(workspace_bytes) {
  GPIPE_CUBLAS_CHECK(cublasLtCreate(&handle_));
  if (workspace_bytes_ > 0) {
    const cudaError_t status = cudaMalloc(&workspace_, workspace_bytes_);
    if (status != cudaSuccess) {
      cublasLtDestroy(handle_);
      throw_cuda_error("cudaMalloc(&workspace_, workspace_bytes_)", __FILE__, __LINE__,
                       cudaGetErrorString(status));
    }
  }
}

std::size_t BlasHandle::planned_shapes() const { return plans_->plans.size(); }

BlasHandle::~BlasHandle() {
  // Destructors do not throw; a failure here leaves nothing to recover.
  plans_.reset();  // the descriptors before the handle
  if (workspace_ != nullptr) cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

void gemm(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
          std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda,
          const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          const GemmBatch& batch) {
  matmul(blas, stream, trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, batch,
         Operands{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F,
                  sizeof(float), sizeof(float), a, b, c});
}

void gemm(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
          std::int64_t n, std::int64_t k, float alpha, const Bf16* a, std::int64_t lda,
          const Bf16* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
          const GemmBatch& batch) {
  matmul(blas, stream, trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, batch,
         Operands{CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F, sizeof(Bf16),
                  sizeof(float), a, b, c});
}

void gemm(BlasHandle& blas, StreamHandle stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
          std::int64_t n, std::int64_t k, float alpha, const Bf16* a, std::int64_t lda,
          const Bf16* b, std::int64_t ldb, float beta, Bf16* c, std::int64_t ldc,
          const GemmBatch& batch) {
  matmul(blas, stream, trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, batch,
         Operands{CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F, sizeof(Bf16),
                  sizeof(Bf16), a, b, c});
}

}  // namespace gpipe::exec::cuda
