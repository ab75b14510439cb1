#include "tools/gpipe-sim/scenario_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "models/optimizer.hpp"
#include "profiles/device.hpp"
#include "schedules/generate.hpp"
#include "sim/action_overhead.hpp"
#include "sim/overlap_model.hpp"
#include "sim/zb_auto.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/schedule_file.hpp"
#include "tools/common/seed_flag.hpp"
#include "tools/common/units.hpp"

namespace gpipe::tools {

void FixedFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--profile", profile,
                 "Profile file, or the name of a shipped profile (profiles/data/NAME.json)")
      ->check(nonempty_path())
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
  cmd.add_option("--schedule-file", schedule_file,
                 "Simulate this schedule (IR JSON or torch CSV, compute-only or with comms) instead of a "
                 "generated one: K, the stages and M come from it")
      ->check(nonempty_path());
  // The range is checked by sim::validate_overlap_share, which names the flag.
  cmd.add_option("--overlap-f-b", overlap_f_b,
                 "Run overlapped F&B pairs ((0F3;3B1)OVERLAP_F_B) concurrently, each at this share (0.5..1) "
                 "of the compute stream; default: one after the other");
  cmd.add_option("--action-overhead-us", action_overhead_us,
                 "A fixed cost per action of these kinds on top of the profile's, such as a framework's own time "
                 "outside the ops it measured: F=120,B=200 (us; docs/torch.md calibrates gpipe to torch with it)");
  cluster.add_to(cmd);
}

std::string unpriced_note(const schedules::Schedule& schedule) {
  int housekeeping = 0;
  for (const auto& list : schedule.ranks) {
    for (const schedules::Action& a : list) housekeeping += schedules::is_housekeeping(a.kind);
  }
  if (housekeeping == 0) return {};
  return fmt::format("note: {} UNSHARD/RESHARD/REDUCE_GRAD/WAIT_REDUCE_GRAD action{} cost 0 (no profile "
                     "gives them a cost)",
                     housekeeping, housekeeping == 1 ? "" : "s");
}

void FixedFlags::apply_to(plan::PlanRequest& request, sim::Conditions& conditions) const {
  request.backward_order = *schedules::parse_backward_order(backward_order);
  conditions.link_latency_us = link_latency_us;
  conditions.link_bandwidth_GBps = link_bandwidth_GBps;
  const auto sharing = sim::parse_link_sharing(link_sharing);
  if (!sharing) throw InputError("--link-sharing must be fifo or shared, not '" + link_sharing + "'");
  conditions.link_sharing = *sharing;
  request.optimizer = *models::parse_optimizer(optimizer);
  sim::validate_overlap_share(overlap_f_b);
  conditions.overlap_share = overlap_f_b;
  if (!action_overhead_us.empty()) conditions.action_overhead_ns = sim::parse_action_overheads(action_overhead_us);
  cluster.apply_to(request, conditions);
}

void ScenarioFlags::add_to(CLI::App& cmd) {
  fixed.add_to(cmd);
  // Required unless --schedule-file gives them (scenario() checks).
  cmd.add_option("--stages,-K", stages, "Number of pipeline ranks K (each holds V stages)")->check(CLI::Range(1, 100000));
  cmd.add_option("--stages-per-rank,-V", stages_per_rank,
                 "Stages per rank V of the interleaved and V-shaped schedules (the model is cut into K x V "
                 "stages; default: the schedule's own; zb-auto: search only layouts of this V)")
      ->check(CLI::Range(1, 64));
  cmd.add_option("--microbatches,-M", microbatches, "Micro-batches per mini-batch M")->check(CLI::Range(1, 1000000));
  auto* n = cmd.add_option("--batch,-N", batch, "Samples per mini-batch N, split over the M micro-batches")
                ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  auto* b = cmd.add_option("--micro-batch-size,-b", micro_batch_size,
                           "Samples per micro-batch b (instead of --batch)")
                ->check(CLI::Range(1, 1 << 24));
  n->excludes(b);
  cmd.add_option("--schedule", schedule,
                 fmt::format("Schedule: {}; zb-auto searches for the fastest schedule of one or two stages "
                             "per rank (within --memory-limit), judged by this simulator",
                             fmt::join(sim::predictable_schedule_names(), ", ")))
      ->check(CLI::IsMember(sim::predictable_schedule_names()))
      ->capture_default_str();
  cmd.add_option("--memory-limit", memory_limit,
                 fmt::format("Memory per rank (static + activations), e.g. 80GB, or device: the profile's "
                             "device memory less {} % (the default where the profile names it). "
                             "--schedule zb-auto keeps to it; every schedule's ranks are checked against it",
                             profiles::kDeviceMemoryReservePercent));
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
  cmd.add_option("--runs", runs, "Simulations with jitter, seeds --seed, --seed + 1, ...")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  // CLI11 would wrap -1 into 2^64 - 1 silently.
  add_seed_flag(cmd, seed, "First seed of the jittered runs");
}

std::optional<MemoryLimit> memory_limit_of(const std::string& flag, const profiles::Profile& profile) {
  if (!flag.empty() && flag != "device") return MemoryLimit{parse_bytes(flag, "--memory-limit"), "--memory-limit"};
  if (!profile.device_memory_bytes) {
    if (flag.empty()) return std::nullopt;
    throw InputError(fmt::format("--memory-limit device: the profile does not say how much memory its device "
                                 "({}) has; give bytes, e.g. 80GB",
                                 profile.device));
  }
  const std::int64_t capacity = *profile.device_memory_bytes;
  return MemoryLimit{profiles::usable_device_memory(capacity),
                     fmt::format("{}'s {} less {} %", profile.device, format_bytes(capacity),
                                 profiles::kDeviceMemoryReservePercent)};
}

sim::Scenario ScenarioFlags::scenario(const CLI::App& cmd) const {
  if (batch == 0 && micro_batch_size == 0) throw InputError("give --batch N or --micro-batch-size b");
  refuse_beside_schedule_file(cmd, fixed.schedule_file);
  if (fixed.schedule_file.empty() && (cmd.count("--stages") == 0 || cmd.count("--microbatches") == 0)) {
    throw InputError("give --stages K and --microbatches M, or --schedule-file FILE");
  }
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
  // The limit itself is settled beside the profile (memory_limit_of); a
  // malformed one fails here, before any work.
  if (!memory_limit.empty() && memory_limit != "device") (void)parse_bytes(memory_limit, "--memory-limit");
  if (!fixed.schedule_file.empty()) r = plan::for_schedule(std::move(r), read_checked_schedule(fixed.schedule_file));
  sim::validate_jitter(jitter_cv, runs);
  sc.conditions.jitter = {jitter_cv, runs, seed};
  return sc;
}

}  // namespace gpipe::tools
