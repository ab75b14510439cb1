// The simulator's peak activation of one rank for a CPU training run's
// configuration: the analytic fp32 profile of the run's model at its
// micro-batch sizes, the run's schedule, recompute and partition. The tests
// that hold a measured peak to the prediction byte for byte share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "plan/microbatches.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "sim/scenario.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec::trainer_test {

inline std::int64_t predicted_peak(const RunConfig& c, const TrainOptions& options, std::size_t rank) {
  const std::vector<int> split = plan::split_batch(c.batch, c.microbatches);
  const std::set<int> distinct(split.begin(), split.end());
  const std::vector<int> sizes(distinct.begin(), distinct.end());
  const profiles::Profile profile =
      profiles::analytic_profile(options.model, profiles::device_named("h100"), models::DType::fp32, sizes);
  sim::Scenario scenario;
  scenario.request.schedule = c.schedule;
  scenario.request.recompute = c.recompute;
  scenario.request.stages = c.stages;
  scenario.request.microbatches = c.microbatches;
  scenario.request.batch = c.batch;
  scenario.request.partition = {models::PartitionMethod::counts, options.partition.layers_per_stage};
  return sim::predict(profile, scenario).metrics.ranks.at(rank).peak_activation_bytes;
}

}  // namespace gpipe::exec::trainer_test
