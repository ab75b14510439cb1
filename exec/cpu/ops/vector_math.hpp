// Elementwise math the compiler can vectorize. std::tanh and std::exp are
// calls into libm, one element at a time; a loop that calls them stays scalar.
// Measured with perf on `gpipe-run train` of transformer:layers=4,hidden=256,
// heads=4,seq=128 (K=1, batch 16), GELU's two tanhf calls per element took 33 %
// of the step (__expm1f 17 %, __tanhf 9 %, the loops around them 7 %). These
// are branch-free polynomials in plain arithmetic, so the loops around them
// become SIMD loops (each kernel is also cloned for AVX2: GPIPE_VECTOR_CLONES).
#pragma once

#include <cmath>
#include <cstdint>

namespace gpipe::exec::cpu {

// Builds the hot elementwise kernels twice, for AVX2+FMA and for the baseline
// x86-64, and picks one at load time (GCC and clang's target_clones, an ifunc);
// other architectures get the one baseline build. Not under a sanitizer, whose
// runtime is not up yet when the loader runs an ifunc's resolver.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPIPE_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPIPE_SANITIZED_BUILD 1
#endif
#if defined(__x86_64__) && !defined(GPIPE_SANITIZED_BUILD)
#define GPIPE_VECTOR_CLONES __attribute__((target_clones("arch=haswell", "default")))
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

// tanh(u): (1 - e) / (1 + e) with e = e^(-2|u|), the sign put back; below
// |u| = 1/8, where 1 - e cancels, its odd Taylor series to u^9 (error under 1e-12).
[[gnu::always_inline]] inline float tanh_approx(float u) {
  const float a = std::fabs(u);
  const float e = exp_nonpositive(-2.0F * a);
  const float large = (1.0F - e) / (1.0F + e);
  const float a2 = a * a;
  float series = 62.0F / 2835.0F;
  series = series * a2 - 17.0F / 315.0F;
  series = series * a2 + 2.0F / 15.0F;
  series = series * a2 - 1.0F / 3.0F;
  series = series * a2 + 1.0F;
  series = series * a;
  // A select in bits: written as `a < 0.125F ? series : large`, GCC 12 keeps a
  // branch around the division when building for AVX2, and the loop stays scalar.
  const std::int32_t small = -static_cast<std::int32_t>(a < 0.125F);
  const float t = __builtin_bit_cast(float, (small & __builtin_bit_cast(std::int32_t, series)) |
                                                (~small & __builtin_bit_cast(std::int32_t, large)));
  // NaN in, NaN out (the select above would make it 1), also in bits.
  const std::int32_t number = -static_cast<std::int32_t>(u == u);
  return __builtin_bit_cast(float, (number & __builtin_bit_cast(std::int32_t, std::copysign(t, u))) |
                                       (~number & __builtin_bit_cast(std::int32_t, u)));
}

}  // namespace gpipe::exec::cpu
