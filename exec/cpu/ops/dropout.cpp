#include "exec/cpu/ops/dropout.hpp"

#include <cmath>

namespace gpipe::exec::cpu {

namespace {

// SplitMix64's finalizer (Steele, Lea and Flood 2014): a bijection of 64-bit
// words whose every output bit depends on every input bit.
constexpr std::uint64_t dropout_hash(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The key of one sample's mask at a site; its elements are hashed from it.
std::uint64_t dropout_sample_key(const DropoutDraw& draw, DropoutSite site, std::int64_t sample) {
  std::uint64_t key = dropout_hash(draw.layer_key ^ 0x9e3779b97f4a7c15ULL);
  key = dropout_hash(key ^ static_cast<std::uint64_t>(draw.step));
  key = dropout_hash(key ^ static_cast<std::uint64_t>(draw.first_sample + sample));
  return dropout_hash(key ^ static_cast<std::uint64_t>(site));
}

// Kept when the element's hash, as a fraction of 2^64, is at least p: the
// top 32 bits against p 2^32 (p resolved to 2^-32).
std::uint64_t dropout_threshold(double probability) {
  return static_cast<std::uint64_t>(std::ldexp(probability, 32));
}

bool element_kept(std::uint64_t key, std::int64_t element, std::uint64_t threshold) {
  return (dropout_hash(key + static_cast<std::uint64_t>(element) * 0x9e3779b97f4a7c15ULL) >> 32) >= threshold;
}

}  // namespace

float DropoutDraw::scale() const {
  return drops() ? static_cast<float>(1.0 / (1.0 - probability)) : 1.0F;
}

bool DropoutDraw::keeps(DropoutSite site, std::int64_t sample, std::int64_t element) const {
  if (!drops()) return true;
  return element_kept(dropout_sample_key(*this, site, sample), element, dropout_threshold(probability));
}

SampleMask::SampleMask(const DropoutDraw& draw, DropoutSite site, std::int64_t sample)
    : key_(dropout_sample_key(draw, site, sample)),
      threshold_(dropout_threshold(draw.probability)),
      drops_(draw.drops()) {}

bool SampleMask::keeps(std::int64_t element) const { return !drops_ || element_kept(key_, element, threshold_); }

void draw_mask(const DropoutDraw& draw, DropoutSite site, std::int64_t samples, std::int64_t per_sample,
               std::int64_t first_element, std::uint8_t* mask) {
  const std::uint64_t threshold = dropout_threshold(draw.probability);
  for (std::int64_t n = 0; n < samples; ++n) {
    std::uint8_t* row = mask + n * per_sample;
    if (!draw.drops()) {
      for (std::int64_t j = 0; j < per_sample; ++j) row[j] = 1;
      continue;
    }
    const std::uint64_t key = dropout_sample_key(draw, site, n);
    for (std::int64_t j = 0; j < per_sample; ++j) row[j] = element_kept(key, first_element + j, threshold) ? 1 : 0;
  }
}

void apply_mask(std::int64_t count, const std::uint8_t* mask, float scale, const float* x, float* y) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = mask[i] != 0 ? x[i] * scale : 0.0F;
}

}  // namespace gpipe::exec::cpu
