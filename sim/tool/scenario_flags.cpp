#include "sim/tool/scenario_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/units.hpp"
#include "models/optimizer.hpp"
#include "schedules/error.hpp"
#include "schedules/generate.hpp"
#include "sim/zb_auto.hpp"

namespace gpipe::cli {

void FixedFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--profile", profile,
                 "Profile file, or the name of a shipped profile (profiles/data/NAME.json)")
      ->capture_default_str();
  cmd.add_option("--backward-order", backward_order, "GPipe backward order")
      ->check(CLI::IsMember({"reverse", "forward"}))
      ->capture_default_str();
  cmd.add_option("--link-latency-us", link_latency_us, "Override the profile's link latency (us)")
      ->check(CLI::Range(0.0, 1e9));
  cmd.add_option("--link-bandwidth-gbps", link_bandwidth_GBps, "Override the profile's link bandwidth (GB/s)")
      ->check(CLI::Range(1e-9, 1e9));
  cmd.add_option("--link-sharing", link_sharing,
                 "Messages on one link: fifo (queue) or shared (split its bandwidth)")
      ->check(CLI::IsMember({"fifo", "shared"}))
      ->capture_default_str();
  cmd.add_option("--optimizer", optimizer, "Optimizer, for static memory (weights, gradients, state)")
      ->check(CLI::IsMember(models::optimizer_names()))
      ->capture_default_str();
}

void FixedFlags::apply_to(plan::PlanRequest& request, sim::Conditions& conditions) const {
  request.backward_order = *schedules::parse_backward_order(backward_order);
  conditions.link_latency_us = link_latency_us;
  conditions.link_bandwidth_GBps = link_bandwidth_GBps;
  const auto sharing = sim::parse_link_sharing(link_sharing);
  if (!sharing) throw InputError("--link-sharing must be fifo or shared, not '" + link_sharing + "'");
  conditions.link_sharing = *sharing;
  request.optimizer = *models::parse_optimizer(optimizer);
}

void ScenarioFlags::add_to(CLI::App& cmd) {
  fixed.add_to(cmd);
  cmd.add_option("--stages,-K", stages, "Number of pipeline ranks K (each holds V stages)")
      ->required()
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--stages-per-rank,-V", stages_per_rank, "Stages per rank V of the interleaved and V-shaped schedules (the model is cut into K x V stages; default: the schedule's own)")
      ->check(CLI::Range(1, 64));
  cmd.add_option("--microbatches,-M", microbatches, "Micro-batches per mini-batch M")
      ->required()
      ->check(CLI::Range(1, 1000000));
  auto* n = cmd.add_option("--batch,-N", batch, "Samples per mini-batch N, split over the M micro-batches")
                ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  auto* b = cmd.add_option("--micro-batch-size,-b", micro_batch_size,
                           "Samples per micro-batch b (instead of --batch)")
                ->check(CLI::Range(1, 1 << 24));
  n->excludes(b);
  cmd.add_option("--schedule", schedule,
                 fmt::format("Schedule: {}; zb-auto searches for the fastest zero-bubble schedule "
                             "(within --memory-limit), judged by this simulator",
                             fmt::join(sim::predictable_schedule_names(), ", ")))
      ->check(CLI::IsMember(sim::predictable_schedule_names()))
      ->capture_default_str();
  cmd.add_option("--memory-limit", memory_limit,
                 "Memory per rank (static + activations), e.g. 80GB: --schedule zb-auto keeps to it");
  cmd.add_option("--recompute", recompute, "Re-materialisation policy")
      ->check(CLI::IsMember(schedules::recompute_policy_names()))
      ->capture_default_str();
  cmd.add_option("--partition", partition,
                 "Layers per stage: balanced (GPipe's partitioner), uniform, or a list n1,n2,...")
      ->capture_default_str();
  // Range checks live in sim::validate_jitter, so the error names the flag the
  // same way from the library and the command line.
  cmd.add_option("--jitter", jitter_cv,
                 "Coefficient of variation of each compute action's duration (lognormal, mean 1); "
                 "> 0 adds percentiles over --runs seeded runs")
      ->capture_default_str();
  cmd.add_option("--runs", runs, "Simulations with jitter, seeds --seed, --seed + 1, ...")->capture_default_str();
  // CLI11 would wrap -1 into 2^64 - 1 silently.
  cmd.add_option("--seed", seed, "First seed of the jittered runs")
      ->check([](const std::string& text) -> std::string {
        return text.find('-') == std::string::npos ? "" : "a seed is an integer of 0 or more, got " + text;
      })
      ->capture_default_str();
}

sim::Scenario ScenarioFlags::scenario() const {
  if (batch == 0 && micro_batch_size == 0) throw InputError("give --batch N or --micro-batch-size b");
  sim::Scenario sc;
  plan::PlanRequest& r = sc.request;
  r.schedule = schedule;
  r.stages = stages;
  r.stages_per_rank = stages_per_rank;
  r.microbatches = microbatches;
  r.batch = batch;
  r.micro_batch_size = micro_batch_size;
  r.recompute = *schedules::parse_recompute_policy(recompute);
  r.partition = models::parse_partition_spec(partition);
  fixed.apply_to(r, sc.conditions);
  if (!memory_limit.empty()) {
    if (schedule != sim::kZbAuto) throw InputError("--memory-limit applies to --schedule zb-auto only");
    sc.conditions.memory_limit_bytes = parse_bytes(memory_limit, "--memory-limit");
  }
  sim::validate_jitter(jitter_cv, runs);
  sc.conditions.jitter = {jitter_cv, runs, seed};
  return sc;
}

}  // namespace gpipe::cli
