#include "tools/gpipe-sim/inference_sweep.hpp"

#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/files.hpp"
#include "models/partition.hpp"
#include "profiles/shipped.hpp"
#include "sim/inference/sweep.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/units.hpp"

namespace gpipe::tools {

void InferenceGridFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--in-flight,-B", in_flight,
                 "Inference: items in flight, 1,2,4 or a range 1..16 (default: each K)");
  cmd.add_option("--micro-batch-sizes", micro_batch_sizes, "Inference: samples per item b, 1,2,4 or a range")
      ->capture_default_str();
  cmd.add_option("--latency-limit", latency_limit,
                 "Inference: keep, per K, the best throughput whose p99 latency is within this (500us, 2ms)");
}

namespace {

void print_best(const std::vector<const sim::inference::SweepRow*>& best) {
  std::cout << fmt::format("{:>4}  {:>4}  {:>4}  {:>12}  {:>9}  {:>10}  {:>10}  {:>10}  {:>10}  {:>11}\n", "K", "B",
                           "b", "samples/s", "per GPU", "p50", "p99", "first", "bottleneck", "peak memory");
  for (const auto* r : best) {
    const auto& m = r->metrics;
    std::cout << fmt::format("{:>4}  {:>4}  {:>4}  {:>12.1f}  {:>9.1f}  {:>10}  {:>10}  {:>10}  {:>10}  {:>11}\n",
                             r->stages, r->in_flight, r->micro_batch_size, m.throughput_samples_per_s,
                             m.throughput_samples_per_s / r->stages,
                             format_time_us(m.latency.p50_us), format_time_us(m.latency.p99_us),
                             format_time_us(m.latency.first_us), fmt::format("stage {}", m.bottleneck_stage),
                             format_bytes(r->peak_memory_bytes));
  }
}

}  // namespace

int run_inference_sweep(const InferenceFlags& flags, const InferenceGridFlags& grid_flags, const SweepCommon& common,
                        const CLI::App& cmd) {
  flags.check_flags(cmd);
  if (cmd.count("--stages") == 0) throw InputError("give --stages LIST");
  sim::inference::SweepGrid grid;
  const std::string stages = cmd.get_option("--stages")->as<std::string>();
  grid.stages = parse_int_list(stages, "--stages");
  grid.micro_batch_sizes = parse_int_list(grid_flags.micro_batch_sizes, "--micro-batch-sizes");
  if (!grid_flags.in_flight.empty()) grid.in_flight = parse_int_list(grid_flags.in_flight, "--in-flight");
  std::optional<double> latency_limit;
  if (!grid_flags.latency_limit.empty()) latency_limit = parse_time_us(grid_flags.latency_limit, "--latency-limit");
  grid.base.workload = flags.workload_of(1);
  grid.base.request.partition = models::parse_partition_spec(common.partition);
  grid.base.conditions.link_latency_us = common.fixed.link_latency_us;
  grid.base.conditions.link_bandwidth_GBps = common.fixed.link_bandwidth_GBps;
  if (!common.memory_limit.empty() && common.memory_limit != "device") {
    (void)parse_bytes(common.memory_limit, "--memory-limit");
  }
  const auto path = profiles::resolve_profile(common.fixed.profile);
  const profiles::Profile profile = profiles::load_profile(path);
  const std::optional<MemoryLimit> memory = memory_limit_of(common.memory_limit, profile);
  std::optional<std::int64_t> memory_limit;
  if (memory) memory_limit = memory->bytes;
  if (!common.out.empty()) check_writable(common.out, "--out");

  // With no B list, each K runs at B = K, the fewest in flight that keep every stage busy.
  std::vector<sim::inference::SweepRow> rows;
  for (const int k : grid.stages) {
    sim::inference::SweepGrid one = grid;
    one.stages = {k};
    if (one.in_flight.empty()) one.in_flight = {k};
    std::vector<sim::inference::SweepRow> part = sim::inference::run_sweep(profile, one);
    rows.insert(rows.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  std::cout << fmt::format("profile {} ({}, {}, {}), inference: {} items per configuration, {}\n", path.string(),
                           profile.source, profile.device, profile.dtype, grid.base.workload.requests,
                           grid.base.workload.closed_loop() ? "closed loop" : "open loop");
  std::size_t skipped = 0;
  for (const auto& r : rows) skipped += r.ok() ? 0 : 1;
  std::cout << fmt::format("{} configurations: {} simulated, {} skipped (cannot exist)\n\n", rows.size(),
                           rows.size() - skipped, skipped);
  std::vector<std::string> limits;
  if (latency_limit) limits.push_back(fmt::format("p99 latency within {}", format_time_us(*latency_limit)));
  if (memory) limits.push_back(fmt::format("memory within {} per rank", format_bytes(memory->bytes)));
  std::cout << "best throughput per K";
  if (!limits.empty()) std::cout << " (" << fmt::format("{}", fmt::join(limits, ", ")) << ")";
  std::cout << ":\n";
  print_best(sim::inference::best_per_stage_count(rows, latency_limit, memory_limit));
  if (!common.out.empty()) {
    std::ofstream csv = open_for_writing(common.out);
    csv << sim::inference::sweep_csv_head();
    for (const auto& r : rows) csv << sim::inference::sweep_csv_row(r, latency_limit, memory_limit);
    finish_writing(csv, common.out);
    std::cout << "\nevery configuration: " << common.out << "\n";
  }
  return 0;
}

}  // namespace gpipe::tools
