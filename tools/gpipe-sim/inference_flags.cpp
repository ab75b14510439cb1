#include "tools/gpipe-sim/inference_flags.hpp"

#include <array>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/partition.hpp"
#include "tools/common/seed_flag.hpp"

namespace gpipe::tools {

void InferenceFlags::add_to(CLI::App& cmd, bool with_in_flight) {
  cmd.add_option("--workload", workload,
                 "training (forward and backward of M micro-batches per step) or inference (a stream of "
                 "--requests items, forward only)")
      ->check(CLI::IsMember({"training", "inference"}))
      ->capture_default_str();
  // Ranges are checked by schedules::validate_workload, which names the flag.
  cmd.add_option("--requests,-R", requests, "Inference: items served, each one micro-batch of b samples")
      ->capture_default_str();
  if (with_in_flight) {
    cmd.add_option("--in-flight,-B", in_flight,
                   "Inference: most items in the pipeline at once (closed loop: item r+B enters when item r "
                   "leaves); default: K");
  }
  auto* interval = cmd.add_option("--arrival-interval-us", arrival_interval_us,
                                  "Inference, open loop: item r arrives at r times this (us); admitted once "
                                  "fewer than B are in flight");
  auto* rate = cmd.add_option("--arrival-rate", arrival_rate,
                              "Inference, open loop: Poisson arrivals at this many items per second");
  interval->excludes(rate);
  add_seed_flag(cmd, arrival_seed, "Inference: seed of the Poisson arrivals", "--arrival-seed");
}

void InferenceFlags::check_flags(const CLI::App& cmd) const {
  static constexpr std::array<std::string_view, 7> inference_only{
      "--requests",     "--in-flight",     "--arrival-interval-us", "--arrival-rate",
      "--arrival-seed", "--latency-limit", "--micro-batch-sizes"};
  static constexpr std::array<std::string_view, 11> training_only{
      "--schedule",     "--microbatches",   "--batch",       "--recompute",    "--stages-per-rank", "--optimizer",
      "--schedule-file", "--backward-order", "--overlap-f-b", "--link-sharing", "--json-out"};
  const auto given = [&](std::string_view flag) {
    const CLI::Option* o = cmd.get_option_no_throw(std::string(flag));
    return o != nullptr && o->count() > 0;
  };
  const std::span<const std::string_view> refused =
      inference() ? std::span<const std::string_view>(training_only) : std::span<const std::string_view>(inference_only);
  for (const std::string_view flag : refused) {
    if (!given(flag)) continue;
    throw InputError(inference()
                         ? fmt::format("{} is for training; --workload inference runs forward only, item by item",
                                       flag)
                         : fmt::format("{} is for inference: add --workload inference", flag));
  }
}

schedules::Workload InferenceFlags::workload_of(int in_flight_default) const {
  schedules::Workload w;
  w.requests = requests;
  w.in_flight = in_flight.value_or(in_flight_default);
  w.arrival_interval_us = arrival_interval_us;
  w.arrival_rate_per_s = arrival_rate;
  w.seed = arrival_seed;
  schedules::validate_workload(w);
  return w;
}

sim::inference::Scenario InferenceFlags::scenario(const ScenarioFlags& shared, const CLI::App& cmd) const {
  check_flags(cmd);
  if (cmd.count("--stages") == 0) throw InputError("give --stages K");
  if (shared.pipeline.micro_batch_size == 0) throw InputError("give --micro-batch-size b: the samples of one item");
  sim::inference::Scenario sc;
  sc.request.stages = shared.pipeline.stages;
  sc.request.micro_batch_size = shared.pipeline.micro_batch_size;
  sc.request.partition = models::parse_partition_spec(shared.partition);
  sc.workload = workload_of(shared.pipeline.stages);
  sc.conditions.link_latency_us = shared.fixed.link_latency_us;
  sc.conditions.link_bandwidth_GBps = shared.fixed.link_bandwidth_GBps;
  sim::validate_jitter(shared.jitter_cv, shared.runs);
  sc.conditions.jitter = {shared.jitter_cv, shared.runs, shared.seed};
  return sc;
}

}  // namespace gpipe::tools
