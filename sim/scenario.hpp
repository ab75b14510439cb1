// One configuration to predict: a profile cut into K stages, a mini-batch split
// into M micro-batches, a schedule and a recompute policy. `gpipe-sim run`
// simulates one; `gpipe-sim sweep` simulates a grid of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/partition.hpp"
#include "profiles/profile.hpp"
#include "schedules/generate.hpp"
#include "schedules/metrics.hpp"
#include "schedules/timeline.hpp"
#include "sim/link_model.hpp"
#include "models/optimizer.hpp"
#include "sim/stochastic.hpp"

namespace gpipe::sim {

struct Scenario {
  std::string schedule = "gpipe";
  schedules::BackwardOrder backward_order = schedules::BackwardOrder::reverse;
  schedules::RecomputePolicy recompute = schedules::RecomputePolicy::never;
  int stages = 1;
  int microbatches = 1;
  std::int64_t batch = 0;        // N samples, split over the micro-batches; or
  int micro_batch_size = 0;      // b samples in every micro-batch (when batch is 0)
  models::PartitionSpec partition;
  std::optional<double> link_latency_us;      // override the profile's link
  std::optional<double> link_bandwidth_GBps;
  models::Optimizer optimizer = models::Optimizer::adamw;
  Jitter jitter;  // cv > 0: also run the stochastic mode
  LinkSharing link_sharing = LinkSharing::fifo;  // how messages on one link share it
};

struct Prediction {
  schedules::Schedule schedule;
  models::Partition partition;
  std::vector<int> microbatch_sizes;  // samples per micro-batch, largest first
  std::int64_t batch = 0;
  double link_latency_us = 0;
  double link_bandwidth_GBps = 0;
  std::vector<std::int64_t> static_bytes;  // per rank
  schedules::Timeline timeline;            // empty when not recorded
  schedules::Metrics metrics;                   // the deterministic run
  std::optional<StochasticResult> stochastic;  // when scenario.jitter.cv > 0
};

// Splits N samples into M micro-batches as torch.tensor_split does: sizes
// differ by at most one, the larger first. Throws InputError when M > N.
[[nodiscard]] std::vector<int> split_batch(std::int64_t batch, int microbatches);

// Throws InputError for a configuration that cannot exist (more stages than
// layers, M > N, a partition that does not sum, a bad --jitter or --runs, ...),
// naming the flag.
[[nodiscard]] Prediction predict(const profiles::Profile& profile, const Scenario& scenario,
                                 bool record_timeline = true);

}  // namespace gpipe::sim
