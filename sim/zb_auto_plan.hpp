// zb-auto over stage layouts. The search of zb_auto.hpp orders one stage per
// rank; the multi-chunk families (interleaved-1f1b, looped-bfs,
// interleaved-zb, zbv, dualpipev) cut the model into K x V stages instead, so
// each needs its own partition, costs and static memory: a plan of its own.
// This makes each layout's plan, simulates each, and keeps the fastest that
// fits the memory limit, so zb-auto is never worse than any handcrafted
// schedule of the same K and M.
//
// The layouts, in this order: V = 1 (the single-chunk search), then each
// multi-chunk family at its default V (2), or at the request's V when it
// names one (V = 1 then means the single-chunk search alone). A family that
// refuses the configuration (interleaved with M not in rounds of K,
// dualpipev with M < 2K, more stages than layers, a partition of K stages)
// is skipped. Ties keep the earlier candidate; everything is deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "profiles/profile.hpp"
#include "sim/link_model.hpp"
#include "sim/scenario.hpp"
#include "sim/zb_auto.hpp"

namespace gpipe::sim {

struct ZbAutoPlan {
  plan::Plan plan;     // its schedule named "zb-auto"
  std::string chosen;  // the label of the candidate kept: "zb-h2", "zbv, V=2", "greedy: ..."
  std::vector<ZbAutoCandidate> candidates;  // every layout's, in order
};

// Judged on `links` as the prediction will be, under the conditions' link
// sharing and overlap; the memory limit is per rank, static + activations.
// Throws InputError when nothing fits (naming the first reason a layout or
// candidate was dropped), or when no layout can be planned at all.
[[nodiscard]] ZbAutoPlan plan_zb_auto(const profiles::Profile& profile, const plan::PlanRequest& request,
                                      const UniformLink& links, const Conditions& conditions);

}  // namespace gpipe::sim
