#include "profiles/median_profile.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::profiles {
double median(std::vector<double> values) {
  std::ranges::sort(values);
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

namespace {

// The same time of every profile, at one layer (and sample): its median.
template <class Get>
double median_over(const std::vector<Profile>& profiles, const Get& get) {
  std::vector<double> values;
  values.reserve(profiles.size());
  for (const Profile& p : profiles) values.push_back(get(p));
  return median(values);
}

bool same_shape(const ProfileSample& a, const ProfileSample& b) {
  return a.micro_batch_size == b.micro_batch_size && a.input_bytes == b.input_bytes &&
         a.output_bytes == b.output_bytes && a.activation_bytes == b.activation_bytes &&
         a.weight_grad_stash_bytes == b.weight_grad_stash_bytes &&
         a.bwd_input_us.has_value() == b.bwd_input_us.has_value();
}

void check_matches(const Profile& first, const Profile& other, std::size_t index) {
  const auto mismatch = [index](const std::string& what) {
    return InputError(fmt::format("profile {} of a median differs from the first in {}", index, what));
  };
  if (other.layers.size() != first.layers.size()) throw mismatch("its number of layers");
  if (other.contention.size() != first.contention.size()) throw mismatch("its contention points");
  for (std::size_t c = 0; c < first.contention.size(); ++c) {
    if (other.contention[c].busy_peers != first.contention[c].busy_peers) throw mismatch("its contention points");
  }
  for (std::size_t l = 0; l < first.layers.size(); ++l) {
    const LayerProfile& a = first.layers[l];
    const LayerProfile& b = other.layers[l];
    if (a.name != b.name || a.kind != b.kind || a.param_bytes != b.param_bytes) {
      throw mismatch(fmt::format("layer {} ({})", l, a.name));
    }
    if (a.samples.size() != b.samples.size()) throw mismatch(fmt::format("layer {}'s sizes", a.name));
    for (std::size_t s = 0; s < a.samples.size(); ++s) {
      if (!same_shape(a.samples[s], b.samples[s])) {
        throw mismatch(fmt::format("layer {} at micro-batch size {}", a.name, a.samples[s].micro_batch_size));
      }
    }
  }
}

// Each point's one-way time its median, where every profile measured the
// same sizes (else the first's points stand).
void median_points(std::vector<LinkPoint>& points, const std::vector<Profile>& profiles,
                   std::vector<LinkPoint> Link::*which) {
  for (const Profile& p : profiles) {
    const std::vector<LinkPoint>& other = p.link.*which;
    if (other.size() != points.size()) return;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (other[i].bytes != points[i].bytes) return;
    }
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    points[i].one_way_us = median_over(profiles, [&](const Profile& p) { return (p.link.*which)[i].one_way_us; });
  }
}

// A collective's fit, its latency and bandwidth each the median, where every
// profile has one (each profile of a validate round fits its own).
void median_fit(std::optional<CollectiveLink>& fit, const std::vector<Profile>& profiles,
                std::optional<CollectiveLink> Link::*which) {
  if (!std::ranges::all_of(profiles, [&](const Profile& p) { return (p.link.*which).has_value(); })) return;
  fit->latency_us = median_over(profiles, [&](const Profile& p) { return (p.link.*which)->latency_us; });
  fit->bandwidth_GBps = median_over(profiles, [&](const Profile& p) { return (p.link.*which)->bandwidth_GBps; });
}

}  // namespace

Profile median_profile(const std::vector<Profile>& profiles) {
  if (profiles.empty()) throw InputError("a median of profiles needs at least one");
  for (std::size_t i = 1; i < profiles.size(); ++i) check_matches(profiles.front(), profiles[i], i);
  Profile out = profiles.front();
  // The link too: a transfer between two processes drifts by a fifth from
  // one minute to the next on a shared machine (validation.md).
  out.link.latency_us = median_over(profiles, [](const Profile& p) { return p.link.latency_us; });
  out.link.bandwidth_GBps = median_over(profiles, [](const Profile& p) { return p.link.bandwidth_GBps; });
  median_points(out.link.points, profiles, &Link::points);
  median_points(out.link.pipeline_points, profiles, &Link::pipeline_points);
  for (const auto which : {&Link::collective, &Link::reduce_scatter, &Link::all_gather, &Link::tensor_all_reduce,
                           &Link::context_all_gather, &Link::context_reduce_scatter}) {
    median_fit(out.link.*which, profiles, which);
  }
  for (std::size_t c = 0; c < out.contention.size(); ++c) {
    out.contention[c].slowdown = median_over(profiles, [c](const Profile& p) { return p.contention[c].slowdown; });
  }
  for (std::size_t l = 0; l < out.layers.size(); ++l) {
    LayerProfile& layer = out.layers[l];
    layer.optimizer_us = median_over(profiles, [l](const Profile& p) { return p.layers[l].optimizer_us; });
    for (std::size_t s = 0; s < layer.samples.size(); ++s) {
      ProfileSample& sample = layer.samples[s];
      const auto at = [l, s](const Profile& p) -> const ProfileSample& { return p.layers[l].samples[s]; };
      sample.fwd_us = median_over(profiles, [&](const Profile& p) { return at(p).fwd_us; });
      sample.bwd_us = median_over(profiles, [&](const Profile& p) { return at(p).bwd_us; });
      if (sample.bwd_input_us) {
        sample.bwd_input_us = median_over(profiles, [&](const Profile& p) { return *at(p).bwd_input_us; });
        sample.bwd_weight_us = median_over(profiles, [&](const Profile& p) { return *at(p).bwd_weight_us; });
      }
    }
  }
  return out;
}

}  // namespace gpipe::profiles
