// Row-major single-precision GEMM over OpenBLAS: the one place the CPU layers
// call BLAS. OpenBLAS is pinned to one thread on first use, because every
// pipeline stage runs its GEMMs on its own worker thread; OpenBLAS threads on
// top of those would oversubscribe the cores and distort the measured times.
// A rank with more threads (--threads-per-rank) splits each large GEMM over
// its ComputeTeam (exec/cpu/compute_team.hpp), a single-threaded GEMM a band
// of rows (of columns, for a GEMM with few rows), cut where every element
// comes out as one thread computes it (gemm.cpp says where, and why).
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

enum class Transpose : bool { no = false, yes = true };

// C[m,n] = alpha * op(A) op(B) + beta * C. Every matrix is row-major with the
// given leading dimension (elements from one row to the next), so a head's
// columns inside a wider matrix are addressed in place; op(A) is [m,k], op(B)
// [k,n]. beta = 0 overwrites C, beta = 1 accumulates into it.
void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
          float beta, float* c, std::int64_t ldc);

// The number of threads OpenBLAS uses: 1 once any gemm() has run.
[[nodiscard]] int blas_threads();

// For a rank's thread, when it starts: has OpenBLAS take a GEMM buffer (128
// MiB on x86-64) now, while memory is there. OpenBLAS takes one at the first
// large GEMM that finds none free, and when memory has run out by then (an
// address-space limit, ulimit -v), releases up to 0.3.29 retry forever
// (OpenMathLib/OpenBLAS#5289): the rank would hang instead of failing.
// Throws std::bad_alloc when there is no room for a buffer.
void prepare_blas_thread();

}  // namespace gpipe::exec::cpu
