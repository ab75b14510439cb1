// Planning for a real model rather than for a profile alone (`gpipe-run train`
// and `validate`): the profile must describe the model and K must fit its
// layers, and with no measured profile the partitioner balances on the
// model's analytic costs.
#pragma once

#include <span>

#include "models/model.hpp"
#include "plan/plan.hpp"
#include "profiles/profile.hpp"

namespace gpipe::plan {

// Throws InputError naming --profile unless `profile` describes `model`: the
// same canonical spec, and the same layers (name and kind) in the same order.
void check_profile_matches(const models::Model& model, const profiles::Profile& profile);

// What only the model can say about `request` before it is planned on
// `profile`: check_profile_matches, then K at most the model's layer count
// ("--stages 9 exceeds the 8 layers of the model: every stage needs at least one layer").
void check_request_for_model(const models::Model& model, const profiles::Profile& profile,
                             const PlanRequest& request);

// What the partitioner balances on when no measured profile is given: the
// analytic profile of the model in fp32 at `micro_batch_sizes` (distinct; on
// the first known device, with no fixed per-pass overhead, so that the costs
// are proportional to the layers' FLOPs and bytes; only their ratios matter).
[[nodiscard]] profiles::Profile balancing_profile(const models::Model& model,
                                                  std::span<const int> micro_batch_sizes);

}  // namespace gpipe::plan
