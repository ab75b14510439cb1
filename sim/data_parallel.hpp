// Data parallelism (docs/design.md "Data parallelism"): D replicas of the
// pipeline, each stage's gradients reduced over its data-parallel group (the
// same stage of every replica) before its STEP, and with ZeRO (Rajbhandari
// et al., arXiv 1910.02054) the optimizer state, gradients and weights
// sharded over it. What that adds to a replica's step, priced by
// profiles/collectives.hpp over the group's link (each GPU's, one way), with
// G_s the stage's gradient bytes (its parameters in the run's dtype):
// - REDUCE_GRAD(s) starts the reduction on the rank's reduce stream
//   (schedules/gradient_reduction.hpp): the gradients in buckets of
//   `bucket_bytes` (the last one the rest), each an all-reduce (ZeRO 0) or a
//   reduce-scatter (ZeRO 1 to 3), the faster algorithm, one after another
//   (each collective over its own fit where the profile has one):
//     gradient_reduction_ns(s) = sum over buckets of fastest(collective, D, bucket)
//   WAIT_REDUCE_GRAD(s), before STEP(s), waits for it.
// - STEP(s): ZeRO 0 as profiled; ZeRO 1 and 2 each GPU updates its 1/D of the
//   state, then gathers the updated weights (an all-gather of G_s, ring):
//     ceil(step / D) + all_gather(D, G_s);  ZeRO 3: ceil(step / D), the
//   weights staying sharded. With overlap_param_gather (Megatron-LM's
//   --overlap-param-gather) the gather runs beside the next step's first
//   forward of the stage, bucket by bucket, and only what outlasts it shows:
//     ceil(step / D) + max(0, all_gather(D, G_s) - F(s, micro-batch 0)).
// - ZeRO 3: F, R, B and I of stage s first gather its weights (torch's
//   UNSHARD; an all-gather of G_s), on the compute stream; W needs none.
// - A tied embedding's ends (schedules/tied_gradient.hpp): WAIT_REDUCE_GRAD(s),
//   once the other end's copy has arrived, sums it over the replicas too:
//   + all_reduce(D, the tied matrix's bytes), on the compute stream.
// Every other cost is the base model's.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/collective.hpp"
#include "models/partition.hpp"
#include "profiles/collectives.hpp"
#include "profiles/profile.hpp"
#include "sim/cost_model.hpp"

namespace gpipe::sim {

struct DataParallelism {
  int degree = 1;  // D
  int zero = 0;    // ZeRO stage, 0 to 3
  profiles::CollectiveLink link;
  // Where the reduce-scatter and all-gather have fits of their own (a
  // measured profile's, profiles::Link): theirs; nullopt: `link`.
  std::optional<profiles::CollectiveLink> reduce_scatter_link;
  std::optional<profiles::CollectiveLink> all_gather_link;
  std::int64_t bucket_bytes = models::kGradientBucketBytes;
  // The gradients' bytes over the weights': 2 where a 16-bit model holds and
  // reduces fp32 main gradients (plan::PlanRequest::fp32_main_grads), else 1.
  // The reductions carry G_s times it; ZeRO's gathers of weights, G_s.
  int gradient_widening = 1;
  // ZeRO 1 and 2's gather of the weights beside the next step's forward (above).
  bool overlap_param_gather = false;

  // The parameters `collective` is priced with.
  [[nodiscard]] const profiles::CollectiveLink& link_for(profiles::Collective collective) const {
    if (collective == profiles::Collective::reduce_scatter && reduce_scatter_link) return *reduce_scatter_link;
    if (collective == profiles::Collective::all_gather && all_gather_link) return *all_gather_link;
    return link;
  }
};

// InputError, naming the flag, for a degree < 1, a ZeRO stage outside 0..3,
// ZeRO > 0 with one replica, or a bucket < 1 byte or a bad link.
void validate(const DataParallelism& dp);

class DataParallelCosts final : public RepricedCosts {
 public:
  // stage_gradient_bytes[s]: G_s. Keeps a reference to `base`, which must
  // outlive it.
  DataParallelCosts(const CostModel& base, const DataParallelism& dp, std::vector<std::int64_t> stage_gradient_bytes);
  DataParallelCosts(CostModel&& base, const DataParallelism&, std::vector<std::int64_t>) = delete;

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override;
  [[nodiscard]] std::int64_t gradient_reduction_ns(schedules::Stage s) const override {
    return reduction_ns_.at(s.at());
  }
  // What it adds is per stage and kind (the gathers, the sharded step, the
  // reductions): the base's table, repriced.
  [[nodiscard]] std::optional<StagePrices> stage_prices() const override { return repriced_stage_prices(); }

  // The weights' all-gather of stage s over the group (ZeRO's), in ns.
  [[nodiscard]] std::int64_t weight_gather_ns(schedules::Stage s) const { return gather_ns_.at(s.at()); }

 private:
  DataParallelism dp_;
  std::vector<std::int64_t> reduction_ns_;  // per stage
  std::vector<std::int64_t> gather_ns_;     // per stage
};

// G_s of each stage of `partition`: the sum of its layers' param_bytes.
[[nodiscard]] std::vector<std::int64_t> stage_gradient_bytes(const profiles::Profile& profile,
                                                             const models::Partition& partition);

// The reduction of `bytes` of gradients in buckets (the header's sum).
[[nodiscard]] std::int64_t bucketed_reduction_ns(const DataParallelism& dp, std::int64_t bytes);

}  // namespace gpipe::sim
