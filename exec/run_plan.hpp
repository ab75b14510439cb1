// How a real run is laid out before it starts: which layers each stage holds,
// chosen exactly as the simulator chooses them, so that a measured run and its
// prediction describe the same pipeline (`gpipe-run validate` diffs the two;
// `gpipe-run train` balances the same way). The plan IS the simulator's
// prediction on a profile of the model: its partition, its schedule, and the
// predicted timeline to compare with.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/model.hpp"
#include "profiles/profile.hpp"
#include "sim/scenario.hpp"

namespace gpipe::exec {

// Throws InputError naming --profile unless `profile` describes `model`: the
// same canonical spec, and the same layers (name and kind) in the same order.
void check_profile_matches(const models::Model& model, const profiles::Profile& profile);

// sim::predict on `profile` after checking what only the model can say:
// the profile describes `model` (its spec, layer by layer), and K is at most
// the model's layer count ("--stages 9 exceeds the 8 layers of the model").
// InputError for every configuration that cannot exist, naming the flag.
[[nodiscard]] sim::Prediction plan_run(const models::Model& model, const profiles::Profile& profile,
                                       const sim::Scenario& scenario, bool record_timeline = false);

// What the partitioner balances on when no measured profile is given: the
// analytic profile of the model in fp32 at `micro_batch_sizes` (on the first
// known device, with no fixed per-pass overhead, so that the costs are
// proportional to the layers' FLOPs and bytes; only their ratios matter).
[[nodiscard]] profiles::Profile balancing_profile(const models::Model& model,
                                                  std::span<const int> micro_batch_sizes);

// The distinct micro-batch sizes that splitting `batch` into each M of
// `microbatches` gives (sim::split_batch), sorted; an M > batch adds none.
[[nodiscard]] std::vector<int> microbatch_sizes_needed(std::int64_t batch,
                                                       std::span<const int> microbatches);

}  // namespace gpipe::exec
