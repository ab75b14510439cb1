// A rank's tensor-parallel group, each all-reduce timed, so that traces show
// the collectives on their own lane per rank: it forwards to the
// launch's group and files the call's interval with the run's timer, which
// keeps it under the compute action then open (ActionTimer::record_collective).
#pragma once

#include <cstdint>
#include <span>

#include "exec/cpu/tensor_parallel_comm.hpp"
#include "exec/runtime/action_timer.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec::cpu {

class TimedTensorParallel final : public TensorParallelComm {
 public:
  TimedTensorParallel(TensorParallelComm& group, ActionTimer& timer, schedules::Rank rank)
      : group_(group), timer_(timer), rank_(rank) {}

  [[nodiscard]] int size() const override { return group_.size(); }
  [[nodiscard]] int rank() const override { return group_.rank(); }
  void all_reduce_sum(std::span<float> values) override {
    const auto start = ActionTimer::Clock::now();
    group_.all_reduce_sum(values);
    const auto end = ActionTimer::Clock::now();
    timer_.record_collective(rank_, timelines::CollectiveGroup::tensor, "all-reduce", static_cast<std::int64_t>(values.size_bytes()), start, end);
  }

 private:
  TensorParallelComm& group_;
  ActionTimer& timer_;
  schedules::Rank rank_;
};

}  // namespace gpipe::exec::cpu
