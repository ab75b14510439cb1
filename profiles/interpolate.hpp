// The cost of one layer at any micro-batch size, from the sizes its profile
// measured (docs/design.md "Profiles"): linear interpolation between the two
// samples around the size, linear extrapolation from the two nearest samples
// outside them, and proportional scaling (value * b / b0) with one sample.
#pragma once

#include <cstdint>

#include "profiles/profile.hpp"

namespace gpipe::profiles {

// Times in microseconds, sizes in bytes, at one micro-batch size.
struct LayerCost {
  double fwd_us = 0;
  double bwd_us = 0;
  // When the profile has no split backward, I and W are half of bwd_us each:
  // zero-bubble schedules still run, with an even split as the neutral guess.
  double bwd_input_us = 0;
  double bwd_weight_us = 0;
  std::int64_t input_bytes = 0;
  std::int64_t output_bytes = 0;
  std::int64_t activation_bytes = 0;
  // What W keeps of activation_bytes after I; all of them when the profile
  // does not say.
  std::int64_t weight_grad_stash_bytes = 0;
  // What the layer keeps for one inference stream (0 where the profile says nothing).
  std::int64_t state_bytes = 0;

  bool operator==(const LayerCost&) const = default;
};

// Times clamp at 0 and sizes at 0 after extrapolation; sizes round to the
// nearest byte (llround), and activation_bytes stays >= input_bytes (it
// includes the input). A sampled size gives that sample's values exactly.
// InputError, naming the layer, if micro_batch_size < 1.
[[nodiscard]] LayerCost cost_at(const LayerProfile& layer, int micro_batch_size);

}  // namespace gpipe::profiles
