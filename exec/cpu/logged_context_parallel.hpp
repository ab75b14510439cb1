// A context-parallel group that keeps each call's time, for the profile:
// `gpipe-run profile --context-parallel C` runs every block's passes over the
// group, and the fits of its calls (collective_call_log.hpp) become the
// profile's context_all_gather and context_reduce_scatter (profiles::Link).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "exec/cpu/collective_call_log.hpp"
#include "exec/cpu/context_parallel_comm.hpp"

namespace gpipe::exec::cpu {

class LoggedContextParallel final : public ContextParallelComm {
 public:
  explicit LoggedContextParallel(ContextParallelComm& group) : group_(group) {}

  [[nodiscard]] int size() const override { return group_.size(); }
  [[nodiscard]] int rank() const override { return group_.rank(); }
  void all_gather(std::span<const float> mine, std::span<float> all) override {
    log_.time(models::Collective::all_gather, static_cast<std::int64_t>(all.size_bytes()),
              [&] { group_.all_gather(mine, all); });
  }
  void reduce_scatter_sum(std::span<const float> all, std::span<float> mine) override {
    log_.time(models::Collective::reduce_scatter, static_cast<std::int64_t>(all.size_bytes()),
              [&] { group_.reduce_scatter_sum(all, mine); });
  }

  // The ring-form fit of `collective`'s calls over the group; nullopt when it never ran.
  [[nodiscard]] std::optional<profiles::CollectiveLink> fit(models::Collective collective) const {
    return log_.fit(collective, group_.size());
  }

 private:
  ContextParallelComm& group_;
  CollectiveCallLog log_;
};

}  // namespace gpipe::exec::cpu
