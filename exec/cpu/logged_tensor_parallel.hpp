// A tensor-parallel group that keeps each all-reduce's time, for the profile:
// `gpipe-run profile --tensor-parallel T` runs every block's passes over the
// group, and the fit of its calls (collective_call_log.hpp) becomes the
// profile's tensor_all_reduce (profiles::Link): the all-reduces as a run's
// blocks meet them, each part waiting for the others.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "exec/cpu/collective_call_log.hpp"
#include "exec/cpu/tensor_parallel_comm.hpp"

namespace gpipe::exec::cpu {

class LoggedTensorParallel final : public TensorParallelComm {
 public:
  explicit LoggedTensorParallel(TensorParallelComm& group) : group_(group) {}

  [[nodiscard]] int size() const override { return group_.size(); }
  [[nodiscard]] int rank() const override { return group_.rank(); }
  void all_reduce_sum(std::span<float> values) override {
    log_.time(models::Collective::all_reduce, static_cast<std::int64_t>(values.size_bytes()),
              [&] { group_.all_reduce_sum(values); });
  }

  // The ring-form fit of the all-reduces over the group; nullopt when none ran.
  [[nodiscard]] std::optional<profiles::CollectiveLink> fit() const {
    return log_.fit(models::Collective::all_reduce, group_.size());
  }

 private:
  TensorParallelComm& group_;
  CollectiveCallLog log_;
};

}  // namespace gpipe::exec::cpu
