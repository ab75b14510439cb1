// The median of several measurements of one model's profile: each time
// (forward, backward, its input and weight halves, the optimizer's share),
// each contention point's slowdown, and the link's latency, bandwidth and
// measured points (where every profile measured the same sizes) is the
// median of that value over the profiles; everything else, sizes and bytes
// and how the link was measured, comes from the first, which the others
// must match. A profile measured once in a noisy minute of a shared machine
// slows or speeds every prediction made from it alike; `gpipe-run validate` measures one before
// each round of its grid and predicts from their median, so that the
// profile's noise spreads over the run as the grid's does.
#pragma once

#include <vector>

#include "profiles/profile.hpp"

namespace gpipe::profiles {

// Throws InputError for no profiles, or profiles of different layers, sizes
// or bytes. With an even count, the mean of the middle two.
[[nodiscard]] Profile median_profile(const std::vector<Profile>& profiles);

// The median of `values` (not empty): with an even count, the mean of the
// middle two. Every median a profile holds is this one.
[[nodiscard]] double median(std::vector<double> values);

}  // namespace gpipe::profiles
