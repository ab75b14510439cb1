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
// AMD EPYC here reaches), waking a helper costs more than it saves. Half of
// it, the least a part gets (M N K = 2^20), is above the sizes (M N K <= 1e6)
// at which OpenBLAS 0.3.21 hands a call to SkylakeX's small-matrix kernels
// instead of its blocked ones: no part takes another path than the whole.
constexpr std::int64_t kMinFlopsPerPart = std::int64_t{4} << 20;

// A team must give bit for bit what one thread gives (compute_team.hpp), and
// how OpenBLAS sums an element depends on where the call's edges are:
//
// - Rows. A row-major C = op(A) op(B) is, to OpenBLAS, the column-major
//   C^T = op(B)^T op(A)^T, so C's rows are its N. Its level-3 driver and
//   every x86-64 sgemm kernel walk N from the call's first row in fixed
//   blocks and sum each block's elements the same whatever N is: Haswell's
//   kernel (Zen's too) takes rows in 12s and those after the last 12 with
//   other code, which sums differently; the other kernels' blocks divide 12
//   (0.3.21, every core type this machine runs; for calls of up to GEMM_R
//   rows, tens of thousands). So a band of rows that starts at a multiple of
//   kRowQuantum gets the sums the whole call gives those rows, where a cut
//   elsewhere (256 rows in 3 parts: at rows 85 and 170) changes some by an
//   ulp or so.
// - Columns are OpenBLAS's M, where Haswell's kernel staggers its blocks (8
//   columns with two accumulators at either end of a call, 16 with one in
//   between): where a band ends changes the sums of the columns near its
//   edges, at any band width. A GEMM with too few rows to split by rows (a
//   decode step's) is therefore split by columns into bands fixed by its
//   shape alone, each one OpenBLAS call whether a team computes it or one
//   thread does them all in turn.
//
// tests/exec/compute_team_test.cpp checks both on whichever kernel runs
// (OPENBLAS_CORETYPE picks one).
constexpr std::int64_t kRowQuantum = 12;
// Column bands are at least this wide (narrower ones cost the one thread a
// few percent: each call packs op(A) again) and start at multiples of 16
// (whole blocks of every kernel's M).
constexpr std::int64_t kMinBandColumns = 512;
constexpr std::int64_t kColumnAlign = 16;

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

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The column bands of a GEMM with few rows: fixed by the shape, never by the
// team. Band b is [start(b), start(b + 1)).
struct ColumnBands {
  std::int64_t n;
  std::int64_t count;
  [[nodiscard]] std::int64_t start(std::int64_t b) const {
    return b == count ? n : n * b / count / kColumnAlign * kColumnAlign;
  }
};

ColumnBands column_bands(std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t width = std::max(kMinBandColumns, ceil_div(kMinFlopsPerPart, 2 * m * k));
  return {n, std::max<std::int64_t>(1, n / width)};
}

}  // namespace

void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
          float beta, float* c, std::int64_t ldc) {
  pin_blas_to_one_thread();
  if (m == 0 || n == 0) return;
  // C's rows [row, row + rows) and columns [col, col + cols), one call.
  const auto one = [&](std::int64_t row, std::int64_t rows, std::int64_t col, std::int64_t cols) {
    cblas_sgemm(CblasRowMajor, to_blas(trans_a), to_blas(trans_b), to_blas(rows), to_blas(cols), to_blas(k), alpha,
                a + (trans_a == Transpose::no ? row * lda : row), to_blas(lda),
                b + (trans_b == Transpose::no ? col : col * ldb), to_blas(ldb), beta, c + row * ldc + col,
                to_blas(ldc));
  };
  const std::int64_t depth = std::max<std::int64_t>(k, 1);
  if (m >= n || m >= 2 * kRowQuantum) {
    // On a rank's team, a part a band of rows of kMinFlopsPerPart or more,
    // cut at the multiple of kRowQuantum nearest an even split (so every part
    // keeps at least half its share, and stays a blocked call).
    const std::int64_t parts = std::min<std::int64_t>(parts_for(2 * m * n * depth, kMinFlopsPerPart),
                                                      std::max<std::int64_t>(1, m / kRowQuantum));
    const auto cut = [&](std::int64_t part) {
      return part == parts ? m : (m * part / parts + kRowQuantum / 2) / kRowQuantum * kRowQuantum;
    };
    for_ranges(parts, static_cast<int>(parts), [&](std::int64_t begin, std::int64_t end) {
      one(cut(begin), cut(end) - cut(begin), 0, n);
    });
  } else {
    const ColumnBands bands = column_bands(m, n, depth);
    for_ranges(bands.count, parts_for(bands.count, 1), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t band = begin; band < end; ++band) {
        one(0, m, bands.start(band), bands.start(band + 1) - bands.start(band));
      }
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
