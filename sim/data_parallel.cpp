#include "sim/data_parallel.hpp"

#include <algorithm>

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::sim {

using profiles::Collective;

void validate(const DataParallelism& dp) {
  if (dp.degree < 1) throw InputError(fmt::format("--data-parallel {}: give 1 or more replicas", dp.degree));
  if (dp.zero < 0 || dp.zero > 3) throw InputError(fmt::format("--zero {}: ZeRO's stages are 0, 1, 2 and 3", dp.zero));
  if (dp.zero > 0 && dp.degree == 1) {
    throw InputError(fmt::format("--zero {} shards over the data-parallel group: give --data-parallel 2 or more",
                                 dp.zero));
  }
  if (dp.bucket_bytes < 1) throw InputError(fmt::format("gradient bucket of {} bytes: give 1 or more", dp.bucket_bytes));
  // The collectives check the link when they price it; check it once here.
  for (const Collective c : {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather}) {
    (void)profiles::collective_ns(c, profiles::CollectiveAlgorithm::ring, 1, 0, dp.link_for(c));
  }
}

std::vector<std::int64_t> stage_gradient_bytes(const profiles::Profile& profile, const models::Partition& partition) {
  std::vector<std::int64_t> bytes;
  for (int s = 0; s < partition.num_stages(); ++s) {
    std::int64_t sum = 0;
    for (int l = partition.first_layer(s); l < partition.end_layer(s); ++l) {
      sum += profile.layers.at(static_cast<std::size_t>(l)).param_bytes;
    }
    bytes.push_back(sum);
  }
  return bytes;
}

std::int64_t bucketed_reduction_ns(const DataParallelism& dp, std::int64_t bytes) {
  const Collective collective = dp.zero == 0 ? Collective::all_reduce : Collective::reduce_scatter;
  const std::int64_t full = bytes / dp.bucket_bytes;
  const std::int64_t rest = bytes % dp.bucket_bytes;
  const profiles::CollectiveLink& link = dp.link_for(collective);
  std::int64_t ns = full > 0 ? full * profiles::fastest_collective(collective, dp.degree, dp.bucket_bytes, link).ns : 0;
  if (rest > 0) ns += profiles::fastest_collective(collective, dp.degree, rest, link).ns;
  return ns;
}

DataParallelCosts::DataParallelCosts(const CostModel& base, const DataParallelism& dp,
                                     std::vector<std::int64_t> stage_gradient_bytes)
    : RepricedCosts(base), dp_(dp) {
  validate(dp);
  for (const std::int64_t bytes : stage_gradient_bytes) {
    reduction_ns_.push_back(dp.degree > 1 ? bucketed_reduction_ns(dp, bytes * dp.gradient_widening) : 0);
    gather_ns_.push_back(dp.zero > 0 ? profiles::fastest_collective(Collective::all_gather, dp.degree, bytes,
                                                                  dp.link_for(Collective::all_gather))
                                         .ns
                                     : 0);
  }
}

std::int64_t DataParallelCosts::duration_ns(const schedules::Action& a) const {
  using K = schedules::ActionKind;
  const std::int64_t base = this->base().duration_ns(a);
  // A tied end sums the other end's copy of the gradient over the replicas
  // too, once it has arrived: one all-reduce of the matrix. On one stage
  // (both ends in it, schedules::tied_partner: none) there is no copy.
  if (a.kind == K::WAIT_REDUCE_GRAD && dp_.degree > 1 && reduction_ns_.size() > 1) {
    const std::int64_t tied = tied_gradient_bytes(a.stage) * dp_.gradient_widening;
    if (tied > 0) {
      return base + profiles::fastest_collective(Collective::all_reduce, dp_.degree, tied,
                                                 dp_.link_for(Collective::all_reduce))
                        .ns;
    }
  }
  if (dp_.zero == 0) return base;
  const std::int64_t d = dp_.degree;
  switch (a.kind) {
    case K::STEP: {
      const std::int64_t shard = (base + d - 1) / d;
      if (dp_.zero == 3) return shard;
      const std::int64_t gather = gather_ns_.at(a.stage.at());
      if (!dp_.overlap_param_gather) return shard + gather;
      const std::int64_t forward =
          this->base().duration_ns(schedules::make_action(a.stage.value, K::F, 0));
      return shard + std::max<std::int64_t>(0, gather - forward);
    }
    case K::F:
    case K::R:
    case K::B:
    case K::I:
      return dp_.zero == 3 ? base + gather_ns_.at(a.stage.at()) : base;
    default:
      return base;
  }
}

}  // namespace gpipe::sim
