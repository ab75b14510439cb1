#include "sim/scenario.hpp"

#include <fmt/format.h>

#include "schedules/error.hpp"
#include "profiles/limits.hpp"
#include "sim/contention.hpp"
#include "sim/engine.hpp"
#include "sim/step_bounds.hpp"
#include "sim/profile_costs.hpp"
#include "sim/zb_auto_plan.hpp"

namespace gpipe::sim {

UniformLink link_of(const profiles::Profile& profile, const Conditions& c) {
  const double latency_us = c.link_latency_us.value_or(profile.link.latency_us);
  const double bandwidth_GBps = c.link_bandwidth_GBps.value_or(profile.link.bandwidth_GBps);
  if (!(latency_us >= 0 && latency_us <= profiles::kMaxTimeUs)) {
    throw InputError(fmt::format("--link-latency-us must be from 0 to {:g} us, got {:g}", profiles::kMaxTimeUs,
                                 latency_us));
  }
  if (!(bandwidth_GBps >= profiles::kMinBandwidthGBps && bandwidth_GBps <= profiles::kMaxBandwidthGBps)) {
    throw InputError(fmt::format("--link-bandwidth-gbps must be from {:g} to {:g} GB/s, got {:g}",
                                 profiles::kMinBandwidthGBps, profiles::kMaxBandwidthGBps, bandwidth_GBps));
  }
  return {latency_us, bandwidth_GBps};
}

Prediction predict(const profiles::Profile& profile, const Scenario& sc, bool record_timeline) {
  plan::Planner planner(profile);
  return predict(planner, sc, record_timeline);
}

Prediction predict(plan::Planner& planner, const Scenario& sc, bool record_timeline) {
  const profiles::Profile& profile = planner.profile();
  Prediction p;
  const Conditions& c = sc.conditions;
  validate_jitter(c.jitter.cv, c.jitter.runs);
  const UniformLink link = link_of(profile, c);
  p.link_latency_us = link.latency_us();
  p.link_bandwidth_GBps = link.bandwidth_GBps();
  if (sc.request.schedule == kZbAuto) {
    try {
      ZbAutoPlan found = plan_zb_auto(profile, sc.request, link, c);
      p.plan = std::move(found.plan);
      p.searched = std::move(found.chosen);
    } catch (const InputError& e) {
      const std::string_view why = e.what();
      if (!c.memory_limit_bytes || why.starts_with("--memory-limit") || !why.starts_with("zb-auto")) throw;
      throw InputError(fmt::format("--memory-limit {} bytes per rank: {}", *c.memory_limit_bytes, why));
    }
  } else {
    p.plan = planner.make(sc.request);
  }
  const ProfileCosts costs(planner, p.plan.partition.layers_per_stage, p.plan.microbatch_sizes);
  check_step_fits(p.plan.schedule, costs, p.link_latency_us, p.link_bandwidth_GBps);
  SimOptions sim;
  sim.batch_size = p.plan.batch;
  sim.static_bytes = p.plan.static_bytes;
  sim.record_timeline = record_timeline;
  // Every generator's output is validated in tests; a given schedule (a file) is checked here.
  sim.validate = sc.request.given != nullptr;
  sim.link_sharing = c.link_sharing;
  sim.overlap_share = c.overlap_share;
  // A profile that measured how ranks slow each other prices that too.
  SimResult result = simulate_with_contention(p.plan.schedule, costs, link, sim, profile.contention);
  if (c.jitter.cv > 0) {
    p.stochastic = run_stochastic(p.plan.schedule, costs, link, sim, c.jitter.cv, c.jitter.runs, c.jitter.seed);
  }
  p.timeline = std::move(result.timeline);
  p.metrics = std::move(result.metrics);
  p.timeline.info.device = profile.device;  // what the prediction is for
  return p;
}

}  // namespace gpipe::sim
