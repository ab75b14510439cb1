#include "exec/run_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec {

void check_profile_matches(const models::Model& model, const profiles::Profile& profile) {
  if (profile.model != model.spec) {
    throw InputError(fmt::format("--profile: it profiles '{}', not --model '{}'", profile.model,
                                 model.spec));
  }
  if (profile.layers.size() != model.layers.size()) {
    throw InputError(fmt::format("--profile: {} layers, the model has {}", profile.layers.size(),
                                 model.layers.size()));
  }
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    if (profile.layers[i].name != model.layers[i].name || profile.layers[i].kind != model.layers[i].kind) {
      throw InputError(fmt::format("--profile: layers[{}] is {} ({}), the model's is {} ({})", i,
                                   profile.layers[i].name, profile.layers[i].kind,
                                   model.layers[i].name, model.layers[i].kind));
    }
  }
}

sim::Prediction plan_run(const models::Model& model, const profiles::Profile& profile,
                         const sim::Scenario& scenario, bool record_timeline) {
  check_profile_matches(model, profile);
  const int layers = static_cast<int>(model.layers.size());
  if (scenario.stages > layers) {
    throw InputError(fmt::format("--stages {} exceeds the {} layers of the model: every stage "
                                 "needs at least one layer",
                                 scenario.stages, layers));
  }
  return sim::predict(profile, scenario, record_timeline);
}

profiles::Profile balancing_profile(const models::Model& model, std::span<const int> micro_batch_sizes) {
  profiles::AnalyticOptions options;
  options.launch_overhead_us = 0.0;  // a fixed cost per pass would pull the split towards uniform
  return profiles::analytic_profile(model, profiles::known_devices().front(), models::DType::fp32,
                                    micro_batch_sizes, options);
}

std::vector<int> microbatch_sizes_needed(std::int64_t batch, std::span<const int> microbatches) {
  std::vector<int> sizes;
  for (const int m : microbatches) {
    if (m < 1 || m > batch) continue;
    const std::vector<int> split = sim::split_batch(batch, m);
    sizes.push_back(split.front());
    sizes.push_back(split.back());
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace gpipe::exec
