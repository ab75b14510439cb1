#include "exec/cpu/ops/gemm.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <limits>
#include <mutex>
#include <stdexcept>

namespace gpipe::exec::cpu {

namespace {

void pin_blas_to_one_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

blasint to_blas(std::int64_t value) {
  if (value < 0 || value > std::numeric_limits<blasint>::max()) {
    throw std::length_error(fmt::format("GEMM dimension {} does not fit the BLAS integer", value));
  }
  return static_cast<blasint>(value);
}

CBLAS_TRANSPOSE to_blas(Transpose t) { return t == Transpose::yes ? CblasTrans : CblasNoTrans; }

}  // namespace

void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
          float beta, float* c, std::int64_t ldc) {
  pin_blas_to_one_thread();
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, to_blas(trans_a), to_blas(trans_b), to_blas(m), to_blas(n), to_blas(k),
              alpha, a, to_blas(lda), b, to_blas(ldb), beta, c, to_blas(ldc));
}

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace gpipe::exec::cpu
