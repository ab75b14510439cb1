#include "sim/scenario.hpp"

#include <cmath>

#include <fmt/format.h>

#include "models/model.hpp"
#include "profiles/interpolate.hpp"
#include "schedules/error.hpp"
#include "sim/engine.hpp"
#include "sim/link_model.hpp"
#include "sim/profile_costs.hpp"

namespace gpipe::sim {
namespace {

// Per-layer cost (forward + backward, ns) at micro-batch size b: what the
// balanced partitioner weighs.
std::vector<std::int64_t> layer_costs_ns(const profiles::Profile& profile, int b) {
  std::vector<std::int64_t> costs;
  costs.reserve(profile.layers.size());
  for (const auto& layer : profile.layers) {
    const profiles::LayerCost c = profiles::cost_at(layer, b);
    costs.push_back(std::llround((c.fwd_us + c.bwd_us) * 1e3));
  }
  return costs;
}

std::vector<std::int64_t> static_bytes_per_rank(const profiles::Profile& profile,
                                                const models::Partition& partition,
                                                const schedules::Schedule& schedule,
                                                models::Optimizer optimizer) {
  const std::int64_t per_param = models::static_bytes_per_param(optimizer, profile.dtype);
  const std::int64_t element = models::bytes_per_element(profile.dtype);
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(schedule.num_ranks), 0);
  for (int st = 0; st < partition.num_stages(); ++st) {
    std::int64_t params = 0;
    for (int l = partition.first_layer(st); l < partition.end_layer(st); ++l) {
      params += profile.layers[static_cast<std::size_t>(l)].param_bytes / element;
    }
    bytes[schedule.rank_of(schedules::Stage{st}).at()] += params * per_param;
  }
  return bytes;
}

}  // namespace

std::vector<int> split_batch(std::int64_t batch, int microbatches) {
  if (microbatches < 1) throw InputError(fmt::format("--microbatches must be at least 1, got {}", microbatches));
  if (batch < microbatches) {
    throw InputError(fmt::format("--microbatches {} exceeds --batch {}: every micro-batch needs a sample",
                                 microbatches, batch));
  }
  std::vector<int> sizes(static_cast<std::size_t>(microbatches),
                         static_cast<int>(batch / microbatches));
  for (std::int64_t i = 0; i < batch % microbatches; ++i) ++sizes[static_cast<std::size_t>(i)];
  return sizes;
}

Prediction predict(const profiles::Profile& profile, const Scenario& sc, bool record_timeline) {
  const int num_layers = static_cast<int>(profile.layers.size());
  if (sc.stages < 1) throw InputError(fmt::format("--stages must be at least 1, got {}", sc.stages));
  if (sc.stages > num_layers) {
    throw InputError(fmt::format("--stages {} exceeds the {} layers of the profile: every stage "
                                 "needs at least one layer",
                                 sc.stages, num_layers));
  }
  validate_jitter(sc.jitter.cv, sc.jitter.runs);
  Prediction p;
  if (sc.batch > 0) {
    p.microbatch_sizes = split_batch(sc.batch, sc.microbatches);
    p.batch = sc.batch;
  } else {
    if (sc.micro_batch_size < 1) throw InputError("give --batch N or --micro-batch-size b");
    if (sc.microbatches < 1) {
      throw InputError(fmt::format("--microbatches must be at least 1, got {}", sc.microbatches));
    }
    p.microbatch_sizes.assign(static_cast<std::size_t>(sc.microbatches), sc.micro_batch_size);
    p.batch = static_cast<std::int64_t>(sc.micro_batch_size) * sc.microbatches;
  }
  p.partition = models::make_partition(sc.partition, layer_costs_ns(profile, p.microbatch_sizes.front()),
                                       sc.stages);

  schedules::ScheduleOptions options;
  options.num_stages = sc.stages;
  options.num_microbatches = sc.microbatches;
  options.backward_order = sc.backward_order;
  options.recompute = sc.recompute;
  p.schedule = schedules::generate(sc.schedule, options);

  p.link_latency_us = sc.link_latency_us.value_or(profile.link.latency_us);
  p.link_bandwidth_GBps = sc.link_bandwidth_GBps.value_or(profile.link.bandwidth_GBps);
  if (p.link_latency_us < 0) throw InputError("--link-latency-us must not be negative");
  if (!(p.link_bandwidth_GBps > 0)) throw InputError("--link-bandwidth-gbps must be positive");
  p.static_bytes = static_bytes_per_rank(profile, p.partition, p.schedule, sc.optimizer);

  const ProfileCosts costs(profile, p.partition.layers_per_stage, p.microbatch_sizes);
  const UniformLink link(p.link_latency_us, p.link_bandwidth_GBps);
  SimOptions sim;
  sim.batch_size = p.batch;
  sim.static_bytes = p.static_bytes;
  sim.record_timeline = record_timeline;
  sim.validate = false;  // generated, and every generator's output is validated in tests
  sim.link_sharing = sc.link_sharing;
  SimResult result = simulate(p.schedule, costs, link, sim);
  if (sc.jitter.cv > 0) {
    p.stochastic = run_stochastic(p.schedule, costs, link, sim, sc.jitter.cv, sc.jitter.runs, sc.jitter.seed);
  }
  p.timeline = std::move(result.timeline);
  p.metrics = std::move(result.metrics);
  p.timeline.info.device = profile.device;  // what the prediction is for
  return p;
}

}  // namespace gpipe::sim
