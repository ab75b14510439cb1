#include "exec/cpu/ops/gemm.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "exec/cpu/compute_team.hpp"

namespace gpipe::exec::cpu {

namespace {

// Below this many FLOPs a part (about 40 us at the 100 GFLOP/s one core of the
// AMD EPYC here reaches), waking a helper costs more than it saves.
constexpr std::int64_t kMinFlopsPerPart = std::int64_t{4} << 20;

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
  const auto one = [&](std::int64_t rows, std::int64_t cols, const float* a_part, const float* b_part,
                       float* c_part) {
    cblas_sgemm(CblasRowMajor, to_blas(trans_a), to_blas(trans_b), to_blas(rows), to_blas(cols),
                to_blas(k), alpha, a_part, to_blas(lda), b_part, to_blas(ldb), beta, c_part,
                to_blas(ldc));
  };
  // On a rank's team: a single-threaded GEMM per part, over a band of C's rows
  // (A's rows with them) or of its columns (B's columns), the longer side.
  const int parts = parts_for(2 * m * n * std::max<std::int64_t>(k, 1), kMinFlopsPerPart);
  if (parts == 1) {
    one(m, n, a, b, c);
  } else if (m >= n) {
    for_ranges(m, parts, [&](std::int64_t begin, std::int64_t end) {
      one(end - begin, n, a + (trans_a == Transpose::no ? begin * lda : begin), b, c + begin * ldc);
    });
  } else {
    for_ranges(n, parts, [&](std::int64_t begin, std::int64_t end) {
      one(m, end - begin, a, b + (trans_b == Transpose::no ? begin : begin * ldb), c + begin);
    });
  }
}

int blas_threads() { return openblas_get_num_threads(); }

void prepare_blas_thread() {
  pin_blas_to_one_thread();
  // Room for a buffer and malloc's own, reserved and given back untouched:
  // without it, this fails here with bad_alloc rather than loop in OpenBLAS.
  constexpr std::size_t kBufferRoom = std::size_t{160} << 20;
  { const std::unique_ptr<std::byte[]> room(new std::byte[kBufferRoom]); }
  // Large enough for OpenBLAS's buffered path: its small-matrix path, up to
  // about 100^3 multiply-adds, takes no buffer.
  constexpr blasint n = 256;
  const std::vector<float> a(static_cast<std::size_t>(n) * n, 0.0F);
  std::vector<float> c(a.size());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0F, a.data(), n, a.data(), n, 0.0F, c.data(), n);
}

}  // namespace gpipe::exec::cpu
