#include "tools/gpipe-sim/scenario_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "models/optimizer.hpp"
#include "models/partition.hpp"
#include "profiles/device.hpp"
#include "schedules/generate.hpp"
#include "sim/action_overhead.hpp"
#include "sim/overlap_model.hpp"
#include "sim/runtime_overhead.hpp"
#include "sim/zb_auto.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/shared_flags.hpp"
#include "tools/common/schedule_file.hpp"
#include "tools/common/seed_flag.hpp"
#include "tools/common/units.hpp"

namespace gpipe::tools {

void FixedFlags::add_to(CLI::App& cmd, std::string& schedule_file) {
  add_profile_flag(cmd, profile, "Profile file, or the name of a shipped profile (profiles/data/NAME.json)")
      ->capture_default_str();
  add_backward_order_flag(cmd, backward_order);
  cmd.add_option("--link-latency-us", link_latency_us, "Override the profile's link latency (us)")
      ->check(CLI::Range(0.0, 1e9));
  cmd.add_option("--link-bandwidth-gbps", link_bandwidth_GBps, "Override the profile's link bandwidth (GB/s)")
      ->check(CLI::Range(1e-9, 1e9));
  cmd.add_option("--link-sharing", link_sharing,
                 "Messages on one link: fifo (queue) or shared (split its bandwidth)")
      ->check(CLI::IsMember({"fifo", "shared"}))
      ->capture_default_str();
  add_optimizer_flag(cmd, optimizer, "Optimizer, for static memory (weights, gradients, state)");
  add_schedule_file_flag(cmd, schedule_file,
                         "Simulate this schedule (IR JSON or torch CSV, compute-only or with comms) instead of a "
                         "generated one: K, the stages and M come from it");
  // The range is checked by sim::validate_overlap_share, which names the flag.
  cmd.add_option("--overlap-f-b", overlap_f_b,
                 "Run overlapped F&B pairs ((0F3;3B1)OVERLAP_F_B) concurrently, each at this share (0.5..1) "
                 "of the compute stream; default: one after the other");
  cmd.add_option("--action-overhead-us", action_overhead_us,
                 "A fixed cost per action of these kinds on top of the profile's, such as a framework's own time "
                 "outside the ops it measured: F=120,B=200 (us; docs/torch.md calibrates gpipe to torch with it)");
  cmd.add_option("--runtime-overhead", runtime_overhead,
                 "A pipeline runtime's own costs, measured once from its own runs (scripts/fit-torch-overhead: "
                 "torch's per action, per layer and per message): added to the profile's, its transfers as the "
                 "link's latency unless --link-latency-us is given")
      ->check(nonempty_path());
  cluster.add_to(cmd);
}

std::string unpriced_note(const schedules::Schedule& schedule, const sim::Conditions& conditions) {
  int housekeeping = 0;
  for (const auto& list : schedule.ranks) {
    for (const schedules::Action& a : list) {
      housekeeping += schedules::is_housekeeping(a.kind) && !conditions.action_overhead_ns.contains(a.kind) &&
                      !conditions.action_overhead_per_layer_ns.contains(a.kind);
    }
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
  if (!runtime_overhead.empty()) {
    if (!action_overhead_us.empty()) {
      throw InputError("--runtime-overhead and --action-overhead-us are two answers to one question: give one");
    }
    const sim::RuntimeOverhead file = sim::read_runtime_overhead(runtime_overhead);
    conditions.action_overhead_ns = file.per_action;
    conditions.action_overhead_per_layer_ns = file.per_layer;
    if (!link_latency_us) conditions.link_latency_us = file.transfer_us;
  }
  cluster.apply_to(request, conditions);
}

std::string runtime_overhead_line(const FixedFlags& flags) {
  if (flags.runtime_overhead.empty()) return {};
  return fmt::format("runtime     {} ({})\n", sim::describe(sim::read_runtime_overhead(flags.runtime_overhead)),
                     flags.runtime_overhead);
}

void ScenarioFlags::add_to(CLI::App& cmd) {
  fixed.add_to(cmd, pipeline.schedule_file);
  pipeline.add_shape(cmd, 100000);
  pipeline.add_batch(cmd, std::int64_t{1} << 40, /*with_micro_batch_size=*/true);
  pipeline.add_schedule(cmd, sim::predictable_schedule_names(),
                        fmt::format("Schedule: {}; zb-auto searches for the fastest schedule of one or two stages "
                                    "per rank (within --memory-limit), judged by this simulator",
                                    fmt::join(sim::predictable_schedule_names(), ", ")));
  cmd.add_option("--memory-limit", memory_limit,
                 fmt::format("Memory per rank (static + activations), e.g. 80GB, or device: the profile's "
                             "device memory less {} % (the default where the profile names it). "
                             "--schedule zb-auto keeps to it; every schedule's ranks are checked against it",
                             profiles::kDeviceMemoryReservePercent));
  pipeline.add_recompute(cmd);
  add_partition_flag(cmd, partition);
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
  if (pipeline.batch == 0 && pipeline.micro_batch_size == 0) throw InputError("give --batch N or --micro-batch-size b");
  pipeline.check(cmd);
  // The limit itself is settled beside the profile (memory_limit_of); a
  // malformed one fails here, before any work.
  if (!memory_limit.empty() && memory_limit != "device") (void)parse_bytes(memory_limit, "--memory-limit");
  sim::Scenario sc;
  sc.request = pipeline.request(cmd);
  sc.request.partition = models::parse_partition_spec(partition);
  fixed.apply_to(sc.request, sc.conditions);
  sim::validate_jitter(jitter_cv, runs);
  sc.conditions.jitter = {jitter_cv, runs, seed};
  return sc;
}

}  // namespace gpipe::tools
