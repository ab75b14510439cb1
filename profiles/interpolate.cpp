#include "profiles/interpolate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "profiles/limits.hpp"

namespace gpipe::profiles {
namespace {

// The line through samples a and b, at `size`; `get` reads one quantity of a
// sample. Multiplying before dividing keeps round designed numbers exact.
template <typename Get>
double line_through(const ProfileSample& a, const ProfileSample& b, int size, Get get) {
  return get(a) + (get(b) - get(a)) * (size - a.micro_batch_size) /
                      (b.micro_batch_size - a.micro_batch_size);
}

// Extrapolated far past the measured sizes, bytes could leave int64: refused.
std::int64_t to_bytes(double value) {
  if (!(value <= static_cast<double>(kMaxBytes) * 4096)) {
    throw InputError(fmt::format("{:g} bytes at this micro-batch size: past the 2^62 the engine counts", value));
  }
  return std::llround(std::max(value, 0.0));
}

}  // namespace

LayerCost cost_at(const LayerProfile& layer, int micro_batch_size) {
  if (micro_batch_size < 1) {
    throw InputError(fmt::format("layer '{}': micro-batch size must be positive (got {})",
                                 layer.name, micro_batch_size));
  }
  if (layer.samples.empty()) {
    throw InputError(fmt::format("layer '{}': profile has no samples", layer.name));
  }
  const auto& samples = layer.samples;
  const auto exact = std::find_if(samples.begin(), samples.end(), [&](const ProfileSample& s) {
    return s.micro_batch_size == micro_batch_size;
  });

  // The first sample above the size; the line runs through it and the one
  // before, clamped to the two first or the two last samples outside. Found
  // once for all the quantities (a sweep asks for thousands of sizes).
  auto hi = samples.end();
  if (exact == samples.end() && samples.size() > 1) {
    const auto above = std::upper_bound(
        samples.begin(), samples.end(), micro_batch_size,
        [](int size, const ProfileSample& s) { return size < s.micro_batch_size; });
    hi = std::clamp(above, samples.begin() + 1, samples.end() - 1);
  }
  // Every quantity goes through `at`, so the three regimes are written once.
  auto at = [&](auto get) -> double {
    if (exact != samples.end()) return get(*exact);
    if (samples.size() == 1) {
      return get(samples.front()) * micro_batch_size / samples.front().micro_batch_size;
    }
    return line_through(*(hi - 1), *hi, micro_batch_size, get);
  };
  auto time = [&](auto get) { return std::max(at(get), 0.0); };

  LayerCost cost;
  cost.fwd_us = time([](const ProfileSample& s) { return s.fwd_us; });
  cost.bwd_us = time([](const ProfileSample& s) { return s.bwd_us; });
  if (layer.has_split_backward()) {
    cost.bwd_input_us = time([](const ProfileSample& s) { return s.bwd_input_us.value(); });
    cost.bwd_weight_us = time([](const ProfileSample& s) { return s.bwd_weight_us.value(); });
  } else {
    cost.bwd_input_us = cost.bwd_us / 2;
    cost.bwd_weight_us = cost.bwd_us / 2;
  }
  auto bytes = [&](auto get) { return to_bytes(at(get)); };
  cost.input_bytes = bytes([](const ProfileSample& s) { return double(s.input_bytes); });
  cost.output_bytes = bytes([](const ProfileSample& s) { return double(s.output_bytes); });
  cost.activation_bytes = std::max(
      bytes([](const ProfileSample& s) { return double(s.activation_bytes); }), cost.input_bytes);
  cost.weight_grad_stash_bytes = cost.activation_bytes;
  if (layer.samples.front().weight_grad_stash_bytes) {
    cost.weight_grad_stash_bytes = std::min(
        bytes([](const ProfileSample& s) {
          return double(s.weight_grad_stash_bytes.value_or(s.activation_bytes));
        }),
        cost.activation_bytes);
  }
  cost.state_bytes = bytes([](const ProfileSample& s) { return double(s.state_bytes.value_or(0)); });
  return cost;
}

}  // namespace gpipe::profiles
