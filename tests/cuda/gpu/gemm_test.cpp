// The cuBLASLt GEMM wrapper against exec/cpu/gemm (OpenBLAS): every transpose
// combination with leading dimensions wider than the rows (a head's columns
// inside a wider matrix), beta accumulation, the strided batch, and bf16
// operands with fp32 accumulation (fp32 and bf16 output) against the CPU
// product of the same bf16-rounded operands.
#include "exec/cpu/ops/gemm.hpp"

#include <cstdint>
#include <vector>

#include "exec/cuda/kernels/bf16.hpp"
#include "exec/cuda/kernels/gemm.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"

namespace gpipe::exec::cuda {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

// fp32 products of k <= 64 terms in [-1, 1]: the CPU and cuBLAS sum in different orders.
constexpr test::Tolerance kGemmFp32{1e-5, 1e-5};
// bf16 operands summed in fp32: only the order differs from the CPU on the same operands...
constexpr test::Tolerance kGemmBf16In{1e-4, 1e-4};
// ... and a bf16 output adds its own rounding (2^-8 relative).
constexpr test::Tolerance kGemmBf16Out{1e-2, 1e-2};

struct Problem {
  Transpose ta;
  Transpose tb;
  std::int64_t m, n, k, lda, ldb, ldc;
  [[nodiscard]] std::int64_t a_size() const { return (ta == Transpose::no ? m : k) * lda; }
  [[nodiscard]] std::int64_t b_size() const { return (tb == Transpose::no ? k : n) * ldb; }
  [[nodiscard]] std::int64_t c_size() const { return m * ldc; }
};

// Leading dimensions `pad` elements wider than the rows, rounded up to a
// multiple of `align`: fp32 takes 3 and 1 (odd offsets, as a head inside qkv);
// bf16 8 and 8, the 16-byte aligned rows its tensor-core kernels want (as
// heads of d a multiple of 8 give).
std::vector<Problem> problems(std::int64_t pad, std::int64_t align) {
  const auto ld = [&](std::int64_t row) { return (row + pad + align - 1) / align * align; };
  std::vector<Problem> all;
  for (const Transpose ta : {Transpose::no, Transpose::yes}) {
    for (const Transpose tb : {Transpose::no, Transpose::yes}) {
      const std::int64_t m = 13;
      const std::int64_t n = 24;
      const std::int64_t k = 40;
      all.push_back({ta, tb, m, n, k, ld(ta == Transpose::no ? k : m),
                     ld(tb == Transpose::no ? n : k), ld(n)});
    }
  }
  return all;
}

TEST(CudaGemm, ARepeatedShapeReusesItsPlanAndGivesTheSameProduct) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  BlasHandle blas;
  const std::int64_t m = 16, n = 32, k = 64;
  const auto a = random_floats(m * k, 101);
  const auto b = random_floats(k * n, 102);
  DeviceBuffer<float> da(a), db(b), dc(m * n);
  gemm(blas, nullptr, Transpose::no, Transpose::no, m, n, k, 1.0F, da.get(), k, db.get(), n, 0.0F, dc.get(), n);
  const std::vector<float> first = dc.download();
  EXPECT_EQ(blas.planned_shapes(), 1U);
  gemm(blas, nullptr, Transpose::no, Transpose::no, m, n, k, 1.0F, da.get(), k, db.get(), n, 0.0F, dc.get(), n);
  EXPECT_EQ(blas.planned_shapes(), 1U);  // the same shape: no new descriptors, no heuristic query
  expect_close("gemm from a cached plan", dc.download(), first, test::kExact);
  gemm(blas, nullptr, Transpose::yes, Transpose::no, k, n, m, 1.0F, da.get(), k, dc.get(), n, 0.0F, db.get(), n);
  EXPECT_EQ(blas.planned_shapes(), 2U);  // another shape gets its own plan
}

TEST(CudaGemm, Fp32MatchesCpuForEveryTransposeWithBetaAccumulation) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  BlasHandle blas;
  std::uint32_t seed = 1;
  for (const Problem& p : problems(3, 1)) {
    const auto a = random_floats(p.a_size(), seed++);
    const auto b = random_floats(p.b_size(), seed++);
    for (const float beta : {0.0F, 1.0F}) {
      auto want = random_floats(p.c_size(), seed++);
      DeviceBuffer<float> da(a), db(b), dc(want);
      gemm(blas, nullptr, p.ta, p.tb, p.m, p.n, p.k, 0.5F, da.get(), p.lda, db.get(), p.ldb, beta,
           dc.get(), p.ldc);
      cpu::gemm(p.ta, p.tb, p.m, p.n, p.k, 0.5F, a.data(), p.lda, b.data(), p.ldb, beta,
                want.data(), p.ldc);
      expect_close("gemm fp32 ta" + std::to_string(static_cast<int>(p.ta)) + " tb" +
                       std::to_string(static_cast<int>(p.tb)) + " beta" + std::to_string(beta),
                   dc.download(), want, kGemmFp32);
    }
  }
}

TEST(CudaGemm, StridedBatchMatchesOneCpuGemmPerMatrix) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  BlasHandle blas;
  // The attention scores shape: per (sample, head) [S, d] x [S, d]^T.
  const std::int64_t batch = 6, s = 8, d = 16;
  const auto q = random_floats(batch * s * d, 11);
  const auto k = random_floats(batch * s * d, 12);
  std::vector<float> want(batch * s * s, 0.0F);
  DeviceBuffer<float> dq(q), dk(k), dc(want);
  gemm(blas, nullptr, Transpose::no, Transpose::yes, s, s, d, 0.25F, dq.get(), d, dk.get(), d, 0.0F,
       dc.get(), s, GemmBatch{batch, s * d, s * d, s * s});
  for (std::int64_t i = 0; i < batch; ++i) {
    cpu::gemm(Transpose::no, Transpose::yes, s, s, d, 0.25F, q.data() + i * s * d, d,
              k.data() + i * s * d, d, 0.0F, want.data() + i * s * s, s);
  }
  expect_close("gemm fp32 strided batch", dc.download(), want, kGemmFp32);
}

std::vector<Bf16> to_bf16_vector(const std::vector<float>& values) {
  std::vector<Bf16> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = cuda::to_bf16(values[i]);
  return out;
}

std::vector<float> from_bf16_vector(const std::vector<Bf16>& values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = cuda::from_bf16(values[i]);
  return out;
}

TEST(CudaGemm, Bf16OperandsAccumulateInFp32) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  BlasHandle blas;
  std::uint32_t seed = 100;
  for (const Problem& p : problems(8, 8)) {
    const auto a = to_bf16_vector(random_floats(p.a_size(), seed++));
    const auto b = to_bf16_vector(random_floats(p.b_size(), seed++));
    // The reference: the CPU product of exactly the operands the GPU sees.
    std::vector<float> want(p.c_size(), 0.0F);
    cpu::gemm(p.ta, p.tb, p.m, p.n, p.k, 1.0F, from_bf16_vector(a).data(), p.lda,
              from_bf16_vector(b).data(), p.ldb, 0.0F, want.data(), p.ldc);
    DeviceBuffer<Bf16> da(a), db(b);
    DeviceBuffer<float> dc(std::vector<float>(p.c_size(), 0.0F));
    gemm(blas, nullptr, p.ta, p.tb, p.m, p.n, p.k, 1.0F, da.get(), p.lda, db.get(), p.ldb, 0.0F,
         dc.get(), p.ldc);
    expect_close("gemm bf16 -> fp32", dc.download(), want, kGemmBf16In);

    DeviceBuffer<Bf16> dc16(std::vector<Bf16>(p.c_size(), 0));
    gemm(blas, nullptr, p.ta, p.tb, p.m, p.n, p.k, 1.0F, da.get(), p.lda, db.get(), p.ldb, 0.0F,
         dc16.get(), p.ldc);
    expect_close("gemm bf16 -> bf16", from_bf16_vector(dc16.download()), want, kGemmBf16Out);
  }
}

TEST(CudaGemm, RejectsALeadingDimensionShorterThanTheRow) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  BlasHandle blas;
  DeviceBuffer<float> a(64), b(64), c(64);
  EXPECT_THROW(gemm(blas, nullptr, Transpose::no, Transpose::no, 4, 4, 4, 1.0F, a.get(), 3, b.get(),
                    4, 0.0F, c.get(), 4),
               std::invalid_argument);
}

}  // namespace
}  // namespace gpipe::exec::cuda
