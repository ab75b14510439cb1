// A context-parallel group that keeps each call's time, for the profile:
// `gpipe-run profile --context-parallel C` runs every block's passes over the
// group, and the medians of its calls, size by size, become the profile's
// context_all_gather and context_reduce_scatter fits (profiles::Link): the
// collectives as a run's blocks meet them, the waits for the other members
// included, which a probe of the collectives alone does not see.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "exec/cpu/context_parallel_comm.hpp"
#include "models/collective.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cpu {

class LoggedContextParallel final : public ContextParallelComm {
 public:
  explicit LoggedContextParallel(ContextParallelComm& group) : group_(group) {}

  [[nodiscard]] int size() const override { return group_.size(); }
  [[nodiscard]] int rank() const override { return group_.rank(); }
  void all_gather(std::span<const float> mine, std::span<float> all) override;
  void reduce_scatter_sum(std::span<const float> all, std::span<float> mine) override;

  // The ring-form fit (profiles::collective_ring_fit) of the median time at
  // each size `collective` was called with (nccl-tests' sizes: the whole
  // gathered or summed tensor); nullopt when it never was.
  [[nodiscard]] std::optional<profiles::CollectiveLink> fit(models::Collective collective) const;

 private:
  void record(models::Collective collective, std::int64_t bytes, double us);

  ContextParallelComm& group_;
  mutable std::mutex mutex_;
  std::map<std::pair<models::Collective, std::int64_t>, std::vector<double>> times_us_;  // by kind and bytes
};

}  // namespace gpipe::exec::cpu
