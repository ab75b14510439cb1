// The ranges a profile's numbers and the simulator's inputs must keep, in one
// place, so that every time and size fits the integer nanoseconds and bytes
// the engine adds up (int64: about 292 years, 8 EiB). A value past them is a
// broken or hostile input, refused with a line naming it, never a wrong
// answer from an overflow.
#pragma once

#include <cstdint>

namespace gpipe::profiles {

// One layer's forward, backward or optimizer step, or a link's latency: 1e12 us is 11.6 days.
inline constexpr double kMaxTimeUs = 1e12;
// One layer's bytes at one micro-batch size, or its parameters: 1 PiB.
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
// A link's bandwidth, GB/s: from 1 kB/s to 1 EB/s.
inline constexpr double kMinBandwidthGBps = 1e-6;
inline constexpr double kMaxBandwidthGBps = 1e9;
// A whole step's sum of compute or transfer times, in ns: 2^62, half of int64.
inline constexpr double kMaxStepNs = 4.6e18;

}  // namespace gpipe::profiles
