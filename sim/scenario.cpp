#include "sim/scenario.hpp"

#include <fmt/format.h>

#include "schedules/error.hpp"
#include "sim/engine.hpp"
#include "sim/profile_costs.hpp"
#include "sim/zb_auto.hpp"

namespace gpipe::sim {
namespace {

// zb-auto has no generator: its plan is 1f1b's (the same stage layout, so the
// same partition and static memory) until the search replaces the schedule.
plan::Plan plan_for(const profiles::Profile& profile, const plan::PlanRequest& request) {
  if (request.schedule != kZbAuto) return plan::make_plan(profile, request);
  plan::PlanRequest placeholder = request;
  placeholder.schedule = "1f1b";
  return plan::make_plan(profile, placeholder);
}

// What each rank may hold in activations: the limit less its static memory.
std::vector<std::int64_t> activation_budgets(std::optional<std::int64_t> limit, const plan::Plan& plan) {
  std::vector<std::int64_t> budgets;
  if (!limit) return budgets;
  for (std::size_t r = 0; r < plan.static_bytes.size(); ++r) {
    const std::int64_t budget = *limit - plan.static_bytes[r];
    if (budget <= 0) {
      throw InputError(fmt::format("--memory-limit {} bytes leaves no room for activations on rank {}: its "
                                   "parameters, gradients and optimizer state take {} bytes",
                                   *limit, r, plan.static_bytes[r]));
    }
    budgets.push_back(budget);
  }
  return budgets;
}

}  // namespace

Prediction predict(const profiles::Profile& profile, const Scenario& sc, bool record_timeline) {
  Prediction p;
  p.plan = plan_for(profile, sc.request);
  const Conditions& c = sc.conditions;
  validate_jitter(c.jitter.cv, c.jitter.runs);
  p.link_latency_us = c.link_latency_us.value_or(profile.link.latency_us);
  p.link_bandwidth_GBps = c.link_bandwidth_GBps.value_or(profile.link.bandwidth_GBps);
  if (p.link_latency_us < 0) throw InputError("--link-latency-us must not be negative");
  if (!(p.link_bandwidth_GBps > 0)) throw InputError("--link-bandwidth-gbps must be positive");

  const ProfileCosts costs(profile, p.plan.partition.layers_per_stage, p.plan.microbatch_sizes);
  const UniformLink link(p.link_latency_us, p.link_bandwidth_GBps);
  if (sc.request.schedule == kZbAuto) {
    schedules::ScheduleOptions o;
    o.num_ranks = sc.request.stages;
    o.num_microbatches = sc.request.microbatches;
    o.recompute = sc.request.recompute;
    const ZbAutoOptions search{activation_budgets(c.memory_limit_bytes, p.plan), c.link_sharing};
    try {
      ZbAutoResult found = search_zb_auto(o, costs, link, search);
      p.plan.schedule = std::move(found.schedule);
      p.searched = std::move(found.chosen);
    } catch (const InputError& e) {
      if (!c.memory_limit_bytes) throw;
      throw InputError(fmt::format("--memory-limit {} bytes per rank: {}", *c.memory_limit_bytes, e.what()));
    }
  }
  SimOptions sim;
  sim.batch_size = p.plan.batch;
  sim.static_bytes = p.plan.static_bytes;
  sim.record_timeline = record_timeline;
  // Every generator's output is validated in tests; a given schedule (a file) is checked here.
  sim.validate = sc.request.given != nullptr;
  sim.link_sharing = c.link_sharing;
  sim.overlap_share = c.overlap_share;
  SimResult result = simulate(p.plan.schedule, costs, link, sim);
  if (c.jitter.cv > 0) {
    p.stochastic = run_stochastic(p.plan.schedule, costs, link, sim, c.jitter.cv, c.jitter.runs, c.jitter.seed);
  }
  p.timeline = std::move(result.timeline);
  p.metrics = std::move(result.metrics);
  p.timeline.info.device = profile.device;  // what the prediction is for
  return p;
}

}  // namespace gpipe::sim
