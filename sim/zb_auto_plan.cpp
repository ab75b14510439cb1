#include "sim/zb_auto_plan.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "sim/engine.hpp"
#include "sim/profile_costs.hpp"
#include "sim/step_bounds.hpp"

namespace gpipe::sim {
namespace {

// The families that cut the model into K x V stages, in the order they are tried.
constexpr std::array<const char*, 5> kMultiChunk = {"interleaved-1f1b", "looped-bfs", "interleaved-zb", "zbv",
                                                    "dualpipev"};
constexpr int kMultiChunkDefaultV = 2;

plan::Plan layout_plan(const profiles::Profile& profile, const plan::PlanRequest& request, const char* family,
                       int stages_per_rank) {
  plan::PlanRequest r = request;
  r.schedule = family;
  r.stages_per_rank = stages_per_rank;
  return plan::make_plan(profile, r);
}

// What each rank of `plan` may hold in activations: the limit less its static
// memory. Empty: no limit. A rank whose static memory fills the limit gets 0.
std::vector<std::int64_t> activation_budgets(std::optional<std::int64_t> limit, const plan::Plan& plan) {
  std::vector<std::int64_t> budgets;
  if (!limit) return budgets;
  for (const std::int64_t s : plan.static_bytes) budgets.push_back(std::max<std::int64_t>(*limit - s, 0));
  return budgets;
}

// Names the first rank whose static memory leaves no room, or "" when all have some.
std::string no_room(std::optional<std::int64_t> limit, const plan::Plan& plan) {
  if (!limit) return {};
  for (std::size_t r = 0; r < plan.static_bytes.size(); ++r) {
    if (plan.static_bytes[r] >= *limit) {
      return fmt::format("--memory-limit {} bytes leaves no room for activations on rank {}: its parameters, "
                         "gradients and optimizer state take {} bytes",
                         *limit, r, plan.static_bytes[r]);
    }
  }
  return {};
}

class LayoutSearch {
 public:
  LayoutSearch(const profiles::Profile& profile, const plan::PlanRequest& request, const UniformLink& links,
               const Conditions& conditions)
      : profile_(profile), request_(request), links_(links), conditions_(conditions) {}

  // The single-chunk search of zb_auto.hpp on the K-stage plan.
  void single_chunk() {
    plan::Plan plan;
    try {
      plan = layout_plan(profile_, request_, "1f1b", 1);
    } catch (const InputError& e) {
      unplanned_.emplace_back(e.what());
      return;
    }
    if (std::string why = no_room(conditions_.memory_limit_bytes, plan); !why.empty()) {
      refuse(std::move(why));
      return;
    }
    const ProfileCosts costs(profile_, plan.partition.layers_per_stage, plan.microbatch_sizes, plan.checkpointing);
    check_step_fits(plan.schedule, costs, links_.latency_us(), links_.bandwidth_GBps());
    schedules::ScheduleOptions o;
    o.num_ranks = request_.stages;
    o.num_microbatches = request_.microbatches;
    o.recompute = request_.recompute;
    const ZbAutoOptions search{activation_budgets(conditions_.memory_limit_bytes, plan), conditions_.link_sharing};
    ZbAutoResult found;
    try {
      found = search_zb_auto(o, costs, links_, search);
    } catch (const InputError& e) {
      refuse(e.what());
      return;
    }
    for (const ZbAutoCandidate& c : found.candidates) candidates_.push_back(c);
    const auto kept = std::find_if(found.candidates.begin(), found.candidates.end(),
                                   [&](const ZbAutoCandidate& c) { return c.label == found.chosen; });
    plan.schedule = std::move(found.schedule);
    offer(std::move(plan), found.chosen, found.step_time_ns, kept->peak_activation_bytes);
  }

  // One family's own schedule on its K x V-stage plan.
  void multi_chunk(const char* family, int stages_per_rank) {
    plan::Plan plan;
    try {
      plan = layout_plan(profile_, request_, family, stages_per_rank);
    } catch (const InputError& e) {
      unplanned_.emplace_back(e.what());
      return;
    }
    ZbAutoCandidate c;
    c.label = fmt::format("{}, V={}", family, stages_per_rank);
    if (std::string why = no_room(conditions_.memory_limit_bytes, plan); !why.empty()) {
      refuse(fmt::format("{} ({})", why, c.label));
      return;
    }
    const ProfileCosts costs(profile_, plan.partition.layers_per_stage, plan.microbatch_sizes, plan.checkpointing);
    check_step_fits(plan.schedule, costs, links_.latency_us(), links_.bandwidth_GBps());
    SimOptions sim;
    sim.batch_size = plan.batch;
    sim.static_bytes = plan.static_bytes;
    sim.record_timeline = false;
    sim.validate = false;  // generated: every generator's output is validated in tests
    sim.link_sharing = conditions_.link_sharing;
    sim.overlap_share = conditions_.overlap_share;
    const SimResult r = simulate(plan.schedule, costs, links_, sim);
    c.step_time_ns = r.metrics.step_time_ns;
    const std::vector<std::int64_t> budgets = activation_budgets(conditions_.memory_limit_bytes, plan);
    for (std::size_t rank = 0; rank < r.metrics.ranks.size(); ++rank) {
      const std::int64_t peak = r.metrics.ranks[rank].peak_activation_bytes;
      c.peak_activation_bytes = std::max(c.peak_activation_bytes, peak);
      if (!budgets.empty() && peak > budgets[rank]) {
        c.fits = false;
        refuse(fmt::format("zb-auto: no schedule fits the memory limit; {} holds {} bytes of activations on "
                           "rank {}, over its budget of {} bytes",
                           c.label, peak, rank, budgets[rank]));
      }
    }
    candidates_.push_back(c);
    if (c.fits) offer(std::move(plan), c.label, c.step_time_ns, c.peak_activation_bytes);
  }

  ZbAutoPlan result() && {
    if (!best_) {
      // Nothing planned: the first layout's own error (more stages than
      // layers, ...); else why the first layout planned did not fit.
      throw InputError(reasons_.empty() ? unplanned_.front() : reasons_.front());
    }
    ZbAutoPlan out{std::move(*best_), std::move(chosen_), std::move(candidates_)};
    out.plan.schedule.name = std::string(kZbAuto);
    return out;
  }

 private:
  void refuse(std::string why) { reasons_.push_back(std::move(why)); }

  // Keeps `plan` when it is faster, or as fast with fewer activation bytes at its peak.
  void offer(plan::Plan plan, std::string label, std::int64_t step_ns, std::int64_t peak_bytes) {
    if (best_ && (step_ns > best_step_ns_ || (step_ns == best_step_ns_ && peak_bytes >= best_peak_bytes_))) return;
    best_ = std::move(plan);
    chosen_ = std::move(label);
    best_step_ns_ = step_ns;
    best_peak_bytes_ = peak_bytes;
  }

  const profiles::Profile& profile_;
  const plan::PlanRequest& request_;
  const UniformLink& links_;
  const Conditions& conditions_;
  std::vector<ZbAutoCandidate> candidates_;
  std::vector<std::string> unplanned_;  // why layouts could not be planned, in order
  std::vector<std::string> reasons_;    // why planned layouts did not fit, in order
  std::optional<plan::Plan> best_;
  std::string chosen_;
  std::int64_t best_step_ns_ = 0;
  std::int64_t best_peak_bytes_ = 0;
};

}  // namespace

ZbAutoPlan plan_zb_auto(const profiles::Profile& profile, const plan::PlanRequest& request, const UniformLink& links,
                        const Conditions& conditions) {
  if (request.recompute == schedules::RecomputePolicy::full) {
    throw InputError("--schedule zb-auto --recompute full: zb-auto's schedules split their backward, which full "
                     "recompute does not run yet");
  }
  if (const models::RecomputeModules modules = plan::recompute_modules_of(profile); modules.any()) {
    throw InputError(fmt::format("--schedule zb-auto: the profile's model recomputes modules (recompute={}) and "
                                 "zb-auto's schedules split their backward, which module recompute does not run yet",
                                 models::to_string(modules)));
  }
  LayoutSearch search(profile, request, links, conditions);
  const int v = request.stages_per_rank;
  if (v <= 1) search.single_chunk();
  if (v != 1) {
    for (const char* family : kMultiChunk) search.multi_chunk(family, v == 0 ? kMultiChunkDefaultV : v);
  }
  return std::move(search).result();
}

}  // namespace gpipe::sim
