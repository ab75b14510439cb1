// The link model's two numbers from measured points: one-way time =
// latency + bytes / bandwidth, fitted by least squares on the relative error,
// so that an 8-byte message counts as much as a 64 MiB one (a plain fit
// would let the largest sizes decide the latency, or make it negative).
#pragma once

#include <vector>

#include "models/collective.hpp"
#include "profiles/profile.hpp"

namespace gpipe::profiles {

// `points` with at least two distinct sizes and positive times: the fitted
// latency (clamped at 0) and bandwidth, with `points` and `measured_with`
// kept. Throws InputError otherwise.
[[nodiscard]] Link fit_link(std::vector<LinkPoint> points, std::string measured_with);

// `link` (a ping-pong's fit) with its latency kept and its bandwidth refitted
// to `pipeline_points`, the median messages of a real pipeline (least
// squares on the relative error, through the fixed latency), which are kept
// as link.pipeline_points; `measured_with` replaces the description. At
// least one point, each slower than the latency; InputError otherwise.
[[nodiscard]] Link refit_bandwidth(Link link, std::vector<LinkPoint> pipeline_points, std::string measured_with);

// The link as a pipeline's messages show it (what `gpipe-run profile` keeps
// under mpirun): with two or more distinct sizes, both terms fitted to
// `pipeline_points` as fit_link fits them, so that the latency holds what
// every pipeline message pays whatever its size (the receiver noticing the
// message, its buffer). Where that fit is below the ping-pong's latency or
// above its bandwidth, and with one size, it is refit_bandwidth's line.
[[nodiscard]] Link fit_pipeline_link(Link ping_pong, std::vector<LinkPoint> pipeline_points,
                                     std::string measured_with);

// The model's one-way time of `bytes`, in us.
[[nodiscard]] double link_time_us(const Link& link, double bytes);

// The largest |model - measured| / measured over `points` (0 with none).
[[nodiscard]] double link_fit_max_relative_error(const Link& link, const std::vector<LinkPoint>& points);
// ... over the points the link's bandwidth was fitted to: its pipeline points
// when it has them, else its ping-pong's.
[[nodiscard]] double link_fit_max_relative_error(const Link& link);

// A collective's parameters in profiles/collectives.hpp's ring form from its
// measured times over `ranks` processes (`points`: nccl-tests' sizes and us):
// the line t = L + S / B' fitted as fit_link fits it (with one size, or
// where the larger sizes ran no slower, through the origin and the points'
// totals) is steps x (a + S / (n B)) with steps = 2(n - 1) for the
// all-reduce and n - 1 for the others, so a = L / steps and B = B' steps / n.
// At least one point, each taking time, and ranks >= 2; InputError otherwise.
[[nodiscard]] CollectiveLink collective_ring_fit(models::Collective collective, int ranks,
                                                 std::vector<LinkPoint> points);

}  // namespace gpipe::profiles
