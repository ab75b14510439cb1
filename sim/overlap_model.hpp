// How an overlapped forward and backward (Schedule::overlapped, torch's
// `(0F3;3B1)OVERLAP_F_B`) run on their rank's compute stream.
//
// Sequential (no share, the default): one after the other, as listed, which
// is what torch does without a custom OVERLAP_F_B function.
//
// Concurrent (`--overlap-f-b SHARE`): both start together, once the rank is
// free and both have their inputs; each runs at SHARE of the stream, so it
// takes its duration / SHARE; the rank is free when both have ended, and is
// busy for the longer of the two. SHARE = 1 is perfect overlap (the pair takes
// max(F, B)); SHARE = 0.5 is none (max(F, B) x 2 >= F + B). For F = 300 ns,
// B = 500 ns and SHARE 0.8: F ends 375 ns and B 625 ns after the pair starts.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

namespace gpipe::sim {

inline constexpr double kMinOverlapShare = 0.5;

// The duration of one action of a concurrent pair.
[[nodiscard]] inline std::int64_t overlapped_duration_ns(std::int64_t alone_ns, double share) {
  return std::llround(static_cast<double>(alone_ns) / share);
}

// Throws InputError naming --overlap-f-b unless share is in [0.5, 1].
void validate_overlap_share(std::optional<double> share);

}  // namespace gpipe::sim
