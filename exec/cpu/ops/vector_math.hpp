// Elementwise math the compiler can vectorize. std::tanh and std::exp are
// calls into libm, one element at a time; a loop that calls them stays scalar.
// Measured with perf on `gpipe-run train` of transformer:layers=4,hidden=256,
// heads=4,seq=128 (K=1, batch 16), GELU's two tanhf calls per element took 33 %
// of the step (__expm1f 17 %, __tanhf 9 %, the loops around them 7 %). These
// are branch-free polynomials in plain arithmetic, so the loops around them
// become SIMD loops (each kernel is also cloned for AVX2 and AVX-512:
// GPIPE_VECTOR_CLONES).
#pragma once

#include <cmath>
#include <cstdint>

namespace gpipe::exec::cpu {

// Builds the hot elementwise kernels three times, for the x86-64 levels v4
// (AVX-512), v3 (AVX2, FMA) and the baseline, and picks one at load time (GCC
// and clang's target_clones, an ifunc); other architectures get the one
// baseline build. The levels are chosen by the CPU's features: a clone for
// "arch=haswell" is chosen by the CPU's model, so an AMD CPU with AVX-512 ran
// the baseline clone (GELU 4.4x slower, measured with tests/bench/ops_bench).
// Not under a sanitizer, whose runtime is not up yet when the loader runs an
// ifunc's resolver.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPIPE_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPIPE_SANITIZED_BUILD 1
#endif
#if defined(__x86_64__) && !defined(GPIPE_SANITIZED_BUILD)
#define GPIPE_HAVE_VECTOR_CLONES 1
#define GPIPE_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GPIPE_VECTOR_CLONES
#endif

// e^x for x <= 0 (clamped at -87, below which it is 0 to float precision;
// NaN gives e^-87): x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor
// polynomial to r^7 (relative error under 6e-9 there), and 2^n written into
// the exponent bits.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  constexpr float kLog2e = 1.44269504088896341F;
  constexpr float kLn2Hi = 0.693145751953125F;  // ln 2 split in two (Cody and Waite),
  constexpr float kLn2Lo = 1.42860682030941723e-6F;  // so that n * kLn2Hi is exact
  // Written so that NaN also becomes -87: converting NaN to an int is undefined
  // (UBSan's float-cast-overflow caught it, in a diverging run's GELU).
  x = x >= -87.0F ? x : -87.0F;
  // Round to nearest by truncation: x * log2(e) <= 0, so subtracting 0.5 first rounds.
  const auto n = static_cast<std::int32_t>(x * kLog2e - 0.5F);
  const float nf = static_cast<float>(n);
  const float r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  float p = 1.0F / 5040.0F;
  p = p * r + 1.0F / 720.0F;
  p = p * r + 1.0F / 120.0F;
  p = p * r + 1.0F / 24.0F;
  p = p * r + 1.0F / 6.0F;
  p = p * r + 0.5F;
  p = p * r + 1.0F;
  p = p * r + 1.0F;
  const float two_to_n = __builtin_bit_cast(float, static_cast<std::int32_t>((n + 127) << 23));
  return p * two_to_n;
}

// The logistic sigmoid 1 / (1 + e^-z), from e = e^-|z| alone: 1 / (1 + e) for
// z >= 0 and e / (1 + e) below, so that nothing overflows and nothing cancels
// (tanh's (1 - e) / (1 + e) cancels near 0 and needs a series there). NaN gives
// a number: callers multiply by the value they were given, which keeps NaN.
[[gnu::always_inline]] inline float sigmoid_approx(float z) {
  const float e = exp_nonpositive(-std::fabs(z));
  // A select in bits: written as `z >= 0 ? 1 : e`, GCC 12 may keep a branch
  // around the division, and the loop stays scalar.
  const std::int32_t nonnegative = -static_cast<std::int32_t>(z >= 0.0F);
  const float numerator =
      __builtin_bit_cast(float, (nonnegative & __builtin_bit_cast(std::int32_t, 1.0F)) |
                                    (~nonnegative & __builtin_bit_cast(std::int32_t, e)));
  return numerator / (1.0F + e);
}

// `value`, or `probe` where `probe` is NaN: a select in bits, so that a loop
// around it stays SIMD.
[[gnu::always_inline]] inline float nan_or(float probe, float value) {
  const std::int32_t number = -static_cast<std::int32_t>(probe == probe);
  return __builtin_bit_cast(float, (number & __builtin_bit_cast(std::int32_t, value)) |
                                       (~number & __builtin_bit_cast(std::int32_t, probe)));
}

// The largest of x[0, count), count >= 1 (NaN ignored, as exp_shifted_sum
// brings it back).
[[gnu::always_inline]] inline float max_of(std::int64_t count, const float* x) {
  float max = x[0];
#pragma omp simd reduction(max : max)
  for (std::int64_t i = 0; i < count; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

// Softmax's numerator: x[i] = e^(x[i] - shift) with shift >= every x[i], in
// place; returns the sum. A NaN stays NaN (and so does the sum), so that a
// diverging run still fails --check-finite.
[[gnu::always_inline]] inline float exp_shifted_sum(std::int64_t count, float* x, float shift) {
  float sum = 0.0F;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < count; ++i) {
    const float d = x[i] - shift;
    x[i] = nan_or(d, exp_nonpositive(d));
    sum += x[i];
  }
  return sum;
}

}  // namespace gpipe::exec::cpu
