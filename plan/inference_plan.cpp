#include "plan/inference_plan.hpp"

#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "profiles/interpolate.hpp"

namespace gpipe::plan {

InferencePlan make_inference_plan(const profiles::Profile& profile, const InferenceRequest& r) {
  const int num_layers = static_cast<int>(profile.layers.size());
  if (r.stages < 1) throw InputError(fmt::format("--stages must be at least 1, got {}", r.stages));
  if (r.stages > num_layers) {
    throw InputError(fmt::format("--stages {} exceeds the {} layers of the profile: every stage needs at least one layer",
                                 r.stages, num_layers));
  }
  if (r.micro_batch_size < 1) {
    throw InputError(fmt::format("--micro-batch-size must be at least 1, got {}", r.micro_batch_size));
  }
  std::vector<std::int64_t> forward_ns;
  forward_ns.reserve(profile.layers.size());
  for (const profiles::LayerProfile& layer : profile.layers) {
    forward_ns.push_back(std::llround(profiles::cost_at(layer, r.micro_batch_size).fwd_us * 1e3));
  }
  InferencePlan p;
  p.micro_batch_size = r.micro_batch_size;
  p.partition = models::make_partition(r.partition, forward_ns, r.stages);
  p.stages = profiles::stage_costs(profile, p.partition.layers_per_stage, r.micro_batch_size);
  for (const profiles::StageCost& stage : p.stages) p.static_bytes.push_back(stage.param_bytes);
  return p;
}

}  // namespace gpipe::plan
