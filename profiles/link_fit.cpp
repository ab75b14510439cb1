#include "profiles/link_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::profiles {

Link fit_link(std::vector<LinkPoint> points, std::string measured_with) {
  if (points.size() < 2) throw InputError("a link fit needs at least two measured sizes");
  std::sort(points.begin(), points.end(), [](const LinkPoint& a, const LinkPoint& b) { return a.bytes < b.bytes; });
  // Minimise sum ((a + b x - t) / t)^2 over a (latency) and b (us per byte):
  // weighted least squares with weights 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const LinkPoint& p : points) {
    if (!(p.one_way_us > 0)) throw InputError(fmt::format("a link point of {} bytes takes no time", p.bytes));
    const double w = 1.0 / (p.one_way_us * p.one_way_us);
    const auto x = static_cast<double>(p.bytes);
    sw += w;
    sx += w * x;
    sy += w * p.one_way_us;
    sxx += w * x * x;
    sxy += w * x * p.one_way_us;
  }
  const double det = sw * sxx - sx * sx;
  if (!(det > 0)) throw InputError("a link fit needs at least two distinct message sizes");
  double per_byte = (sw * sxy - sx * sy) / det;
  double latency = (sy - per_byte * sx) / sw;
  if (latency < 0) {  // refit through the origin: time = bytes * per_byte
    latency = 0;
    per_byte = sxy / sxx;
  }
  if (!(per_byte > 0)) throw InputError("the measured link does not get slower with more bytes: no bandwidth to fit");
  Link link;
  link.latency_us = latency;
  link.bandwidth_GBps = 1.0 / (per_byte * 1e3);  // bytes per us / 1e3 = GB/s
  link.measured_with = std::move(measured_with);
  link.points = std::move(points);
  return link;
}

Link refit_bandwidth(Link link, std::vector<LinkPoint> pipeline_points, std::string measured_with) {
  if (pipeline_points.empty()) throw InputError("refitting a link's bandwidth needs at least one pipeline point");
  std::sort(pipeline_points.begin(), pipeline_points.end(),
            [](const LinkPoint& a, const LinkPoint& b) { return a.bytes < b.bytes; });
  // Minimise sum ((L + b x - t) / t)^2 over b alone (us per byte), L fixed:
  // b = sum(w x (t - L)) / sum(w x^2), weights 1 / t^2.
  double num = 0, den = 0;
  for (const LinkPoint& p : pipeline_points) {
    if (!(p.one_way_us > link.latency_us) || p.bytes <= 0) {
      throw InputError(fmt::format("a pipeline message of {} bytes took {:.2f} us, no more than the link's latency of "
                                   "{:.2f} us: no bandwidth to fit",
                                   p.bytes, p.one_way_us, link.latency_us));
    }
    const double w = 1.0 / (p.one_way_us * p.one_way_us);
    const auto x = static_cast<double>(p.bytes);
    num += w * x * (p.one_way_us - link.latency_us);
    den += w * x * x;
  }
  link.bandwidth_GBps = 1.0 / (num / den * 1e3);
  link.pipeline_points = std::move(pipeline_points);
  link.measured_with = std::move(measured_with);
  return link;
}

Link fit_pipeline_link(Link ping_pong, std::vector<LinkPoint> pipeline_points, std::string measured_with) {
  std::vector<std::int64_t> sizes;
  for (const LinkPoint& p : pipeline_points) sizes.push_back(p.bytes);
  std::sort(sizes.begin(), sizes.end());
  if (std::unique(sizes.begin(), sizes.end()) - sizes.begin() >= 2) {
    try {
      Link both = fit_link(pipeline_points, measured_with);
      // A pipeline's message costs no less per byte, nor less fixed, than an
      // idle ping-pong's: a fit that says so (sizes too small or too close to
      // tell the terms apart) is noise.
      if (both.latency_us >= ping_pong.latency_us && both.bandwidth_GBps <= ping_pong.bandwidth_GBps) {
        both.pipeline_points = std::move(both.points);
        both.points = std::move(ping_pong.points);
        return both;
      }
    } catch (const InputError&) {
      // Messages that do not get slower with more bytes: no bandwidth of their own.
    }
  }
  return refit_bandwidth(std::move(ping_pong), std::move(pipeline_points), std::move(measured_with));
}

double link_time_us(const Link& link, double bytes) {
  return link.latency_us + bytes / (link.bandwidth_GBps * 1e3);
}

double link_fit_max_relative_error(const Link& link) {
  return link_fit_max_relative_error(link, link.pipeline_points.empty() ? link.points : link.pipeline_points);
}

double link_fit_max_relative_error(const Link& link, const std::vector<LinkPoint>& points) {
  double worst = 0;
  for (const LinkPoint& p : points) {
    if (p.one_way_us > 0) {
      worst = std::max(worst, std::abs(link_time_us(link, static_cast<double>(p.bytes)) - p.one_way_us) / p.one_way_us);
    }
  }
  return worst;
}

CollectiveLink collective_ring_fit(models::Collective collective, int ranks, std::vector<LinkPoint> points) {
  if (ranks < 2) throw InputError(fmt::format("a collective over {} process has no steps to fit", ranks));
  if (points.empty()) throw InputError("a collective's fit needs at least one measured size");
  double bytes = 0;
  double us = 0;
  for (const LinkPoint& p : points) {
    if (!(p.one_way_us > 0)) throw InputError(fmt::format("a collective of {} bytes takes no time", p.bytes));
    bytes += static_cast<double>(p.bytes);
    us += p.one_way_us;
  }
  // One size, or sizes whose larger ones ran no slower (a noisy few): the
  // line through the origin and the points' totals.
  double latency = 0;
  double bandwidth = bytes / us / 1e3;
  if (std::ranges::any_of(points, [&](const LinkPoint& p) { return p.bytes != points.front().bytes; })) {
    try {
      const Link line = fit_link(std::move(points), std::string(models::to_string(collective)));
      latency = line.latency_us;
      bandwidth = line.bandwidth_GBps;
    } catch (const InputError&) {
    }
  }
  const double steps = collective == models::Collective::all_reduce ? 2.0 * (ranks - 1) : ranks - 1.0;
  return {.latency_us = latency / steps, .bandwidth_GBps = bandwidth * steps / ranks};
}

}  // namespace gpipe::profiles
