// The costs of each pipeline stage at one micro-batch size: the sums over the
// consecutive layers a stage holds, in the simulator's integer nanoseconds
// (docs/design.md "Simulation semantics").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "models/checkpointing.hpp"
#include "profiles/profile.hpp"

namespace gpipe::profiles {

struct StageCost {
  std::int64_t fwd_ns = 0;           // F, and R (recompute costs the forward)
  std::int64_t bwd_ns = 0;           // B (with full recompute, the checkpointed layers' forward again too)
  std::int64_t bwd_input_ns = 0;     // I
  std::int64_t bwd_weight_ns = 0;    // W
  std::int64_t optimizer_ns = 0;     // STEP
  std::int64_t activation_bytes = 0; // A_s: sum of the layers' activation_bytes (with full
                                     // recompute, what the checkpoints keep: models/checkpointing.hpp)
  std::int64_t input_bytes = 0;      // In_s: the first layer's input_bytes
  std::int64_t output_bytes = 0;     // the last layer's output_bytes: what SEND_F carries
  std::int64_t param_bytes = 0;      // sum of the layers' param_bytes
  std::int64_t weight_grad_stash_bytes = 0;  // W_s: what W keeps of A_s after I
  std::int64_t state_bytes = 0;      // sum of the layers' state_bytes: one inference stream's
  std::int64_t tied_bytes = 0;       // sum of the layers' tied_bytes: the tied gradient it exchanges
  std::int64_t transient_bytes = 0;  // T_s: what F and B hold beyond A_s while they run (full recompute)

  bool operator==(const StageCost&) const = default;
};

// layers_per_stage[s] is how many consecutive layers stage s holds (the
// --partition n1,n2,... of docs/design.md); it must sum to the profile's layer
// count with every entry >= 1, else InputError naming the partition.
// Each stage's times are summed in microseconds and converted once, as
// llround(sum_us * 1000), so I + W may differ from B by a nanosecond.
// With `checkpointing` (Megatron's full recompute), each stage keeps its
// checkpoints' bytes and a transient (models::checkpointed_bytes), and its B
// and I run the checkpointed layers' forward again first.
[[nodiscard]] std::vector<StageCost> stage_costs(const Profile& profile,
                                                 std::span<const int> layers_per_stage,
                                                 int micro_batch_size,
                                                 const std::optional<models::Checkpointing>& checkpointing = std::nullopt);

}  // namespace gpipe::profiles
