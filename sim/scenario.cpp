#include "sim/scenario.hpp"

#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "models/optimizer.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/limits.hpp"
#include "sim/action_overhead.hpp"
#include "sim/collective_spans.hpp"
#include "sim/contention.hpp"
#include "sim/engine.hpp"
#include "sim/placed_link.hpp"
#include "sim/profile_costs.hpp"
#include "sim/step_bounds.hpp"
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

namespace {

// The profile is one GPU's of the tensor-parallel group asked for.
void check_tensor_parallel(const profiles::Profile& profile, const Conditions& c) {
  if (c.tensor_parallel && *c.tensor_parallel != profile.tensor_parallel) {
    throw InputError(fmt::format("--tensor-parallel {}: the profile is one GPU's of {} (make one for {}: gpipe-sim "
                                 "profile --model SPEC --device D --tensor-parallel {})",
                                 *c.tensor_parallel, profile.tensor_parallel, *c.tensor_parallel,
                                 *c.tensor_parallel));
  }
  if (c.context_parallel && *c.context_parallel != profile.context_parallel) {
    throw InputError(fmt::format("--context-parallel {}: the profile is one GPU's of {} (make one for {}: gpipe-sim "
                                 "profile --model SPEC --device D --context-parallel {})",
                                 *c.context_parallel, profile.context_parallel, *c.context_parallel,
                                 *c.context_parallel));
  }
  if (c.sequence_parallel && *c.sequence_parallel != profile.sequence_parallel) {
    throw InputError(fmt::format("--sequence-parallel: the profile was made {} sequence parallelism",
                                 profile.sequence_parallel ? "with" : "without"));
  }
}

}  // namespace

Prediction predict(plan::Planner& planner, const Scenario& sc, bool record_timeline) {
  const profiles::Profile& profile = planner.profile();
  check_tensor_parallel(profile, sc.conditions);
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
  // The stages' links: the profile's, or on a cluster by where the ranks sit.
  const int tensor = profile.tensor_parallel;
  // A stage's GPUs: its tensor-parallel group, and with context parallelism
  // C of them (Megatron-LM's order, tp-cp-dp-pp: T inside, then C).
  const int stage_gpus = tensor * profile.context_parallel;
  std::optional<PlacedLink> placed;
  bool context_spans_nodes = false;  // with a cluster: the context group is wider than a node
  // Inside a node, collectives run over the profile's link: its collectives'
  // fit where it has one (profiles::Link::collective). A data-parallel group
  // reduces there unless told otherwise or spread over nodes.
  const profiles::CollectiveLink within_node =
      profile.link.collective.value_or(profiles::CollectiveLink{link.latency_us(), link.bandwidth_GBps()});
  bool dp_within_node = !c.data_parallel_link.has_value();
  profiles::CollectiveLink dp_link = c.data_parallel_link.value_or(within_node);
  if (c.cluster) {
    const int ranks = p.plan.schedule.num_ranks;
    const int data = sc.request.data_parallel;
    const plan::ClusterPlacement placement({.gpus = c.cluster->gpus.value_or(stage_gpus * ranks * data),
                                            .gpus_per_node = c.cluster->gpus_per_node},
                                           {.tensor = tensor, .pipeline = ranks, .data = data,
                                            .context = profile.context_parallel});
    std::vector<int> node_of_rank;
    for (int r = 0; r < ranks; ++r) node_of_rank.push_back(placement.node_of(placement.gpu(0, r, 0)));
    const profiles::CollectiveLink& inter = c.cluster->inter_node;
    const int pieces = c.cluster->scatter_gather && tensor > 1 && !profile.sequence_parallel ? tensor : 1;
    placed.emplace(std::move(node_of_rank), link, UniformLink(inter.latency_us, inter.bandwidth_GBps), pieces);
    // The gradient group (D x C) spans nodes with its replicas, or with a
    // context group wider than a node.
    context_spans_nodes = profile.context_parallel > 1 && stage_gpus > c.cluster->gpus_per_node;
    if (dp_within_node && (placement.nodes_spanned_by_data_parallel_group() > 1 || context_spans_nodes)) {
      dp_link = inter;
      dp_within_node = false;
    }
    p.placement = placement.describe();
  }
  const LinkModel& links = placed ? static_cast<const LinkModel&>(*placed) : link;
  const ProfileCosts profiled(planner, p.plan.partition.layers_per_stage, p.plan.microbatch_sizes, p.plan.checkpointing);
  check_step_fits(p.plan.schedule, profiled, p.link_latency_us, p.link_bandwidth_GBps);
  // Data parallelism adds each stage's gradient reduction and ZeRO's gathers.
  std::optional<DataParallelCosts> replicated;
  if (p.plan.schedule.data_parallel > 1) {  // D x C: the plan's gradient group
    std::vector<std::int64_t> gradient_bytes = stage_gradient_bytes(profile, p.plan.partition);
    DataParallelism dp{.degree = p.plan.schedule.data_parallel,
                       .zero = sc.request.zero,
                       .link = dp_link,
                       .bucket_bytes = c.gradient_bucket_bytes,
                       .gradient_widening = models::gradient_bytes_per_element(profile.dtype, sc.request.fp32_main_grads) /
                                            models::bytes_per_element(profile.dtype),
                       .overlap_param_gather = sc.request.overlap_param_gather};
    // The profile's own reduce-scatter and all-gather fits, where its link is the group's.
    if (dp_within_node) {
      dp.reduce_scatter_link = profile.link.reduce_scatter;
      dp.all_gather_link = profile.link.all_gather;
    }
    replicated.emplace(profiled, dp, std::move(gradient_bytes));
    p.data_parallel_link = dp_link;
  }
  const CostModel& priced = replicated ? static_cast<const CostModel&>(*replicated) : profiled;
  std::optional<OverheadCosts> with_overhead;
  if (!c.action_overhead_ns.empty() || !c.action_overhead_per_layer_ns.empty()) {
    with_overhead.emplace(priced, c.action_overhead_ns, c.action_overhead_per_layer_ns,
                          p.plan.partition.layers_per_stage);
  }
  const CostModel& costs = with_overhead ? static_cast<const CostModel&>(*with_overhead) : priced;
  SimOptions sim;
  sim.batch_size = p.plan.batch;
  sim.static_bytes = p.plan.static_bytes;
  sim.record_timeline = record_timeline;
  // Every generator's output is validated in tests; a given schedule (a file) is checked here.
  sim.validate = sc.request.given != nullptr;
  sim.link_sharing = c.link_sharing;
  sim.overlap_share = c.overlap_share;
  // A profile that measured how ranks slow each other prices that too.
  SimResult result = simulate_with_contention(p.plan.schedule, costs, links, sim, profile.contention,
                                              kContentionReplays, c.replicas_sharing_machine);
  if (c.jitter.cv > 0) {
    p.stochastic = run_stochastic(p.plan.schedule, costs, links, sim, c.jitter.cv, c.jitter.runs, c.jitter.seed);
  }
  p.timeline = std::move(result.timeline);
  p.metrics = std::move(result.metrics);
  p.timeline.info.device = profile.device;  // what the prediction is for
  if (record_timeline && stage_gpus > 1) {
    // The spans need the model's collectives: a profile of a model gpipe knows
    // (every tensor- or context-parallel profile gpipe writes is one); else none are drawn.
    std::optional<models::Model> whole;
    try {
      whole = models::parse_model(profile.model);
    } catch (const InputError&) {
    }
    if (whole) {
      const models::Model split = models::split_context_parallel(
          tensor > 1 ? models::split_tensor_parallel(
                           *whole, {.degree = tensor, .sequence_parallel = profile.sequence_parallel})
                     : *whole,
          {.degree = profile.context_parallel, .form = profile.context_form});
      // A tensor-parallel group lies inside a node: its all-reduces as the
      // profiled blocks ran them where measured, else the profile's link. A
      // context group wider than one shares keys and values over the
      // network, else over the profile's link and its own collectives' fits.
      SpanLinks span_links{.tensor = profile.link.tensor_all_reduce.value_or(within_node), .context = within_node};
      if (context_spans_nodes) {
        span_links.context = c.cluster->inter_node;
      } else {
        // As the profiled blocks ran them where measured, else the probe's.
        span_links.context_all_gather = profile.link.context_all_gather ? profile.link.context_all_gather
                                                                        : profile.link.all_gather;
        span_links.context_reduce_scatter = profile.link.context_reduce_scatter ? profile.link.context_reduce_scatter
                                                                                : profile.link.reduce_scatter;
      }
      add_collective_spans(p.timeline, profile, split, p.plan.partition.layers_per_stage, p.plan.microbatch_sizes,
                           span_links);
    }
  }
  return p;
}

}  // namespace gpipe::sim
