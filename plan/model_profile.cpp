#include "plan/model_profile.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"

namespace gpipe::plan {

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

void check_request_for_model(const models::Model& model, const profiles::Profile& profile,
                             const PlanRequest& request) {
  check_profile_matches(model, profile);
  const int layers = static_cast<int>(model.layers.size());
  if (request.stages > layers) {
    throw InputError(fmt::format("--stages {} exceeds the {} layers of the model: every stage "
                                 "needs at least one layer",
                                 request.stages, layers));
  }
}

profiles::Profile balancing_profile(const models::Model& model, std::span<const int> micro_batch_sizes) {
  profiles::AnalyticOptions options;
  options.launch_overhead_us = 0.0;  // a fixed cost per pass would pull the split towards uniform
  return profiles::analytic_profile(model, profiles::device_named("h100"), models::DType::fp32,
                                    micro_batch_sizes, options);
}

}  // namespace gpipe::plan
