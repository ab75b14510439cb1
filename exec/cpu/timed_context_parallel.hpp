// A rank's context-parallel group, each collective timed, so that traces show
// the keys' and values' all-gathers and their gradients' reduce-scatters on a
// lane of their own per rank, which validate compares with the prediction's
// (sim/collective_spans.hpp): it forwards to the launch's group and files
// the call's interval with the run's timer under the compute action then open
// (ActionTimer::record_collective). Bytes are nccl-tests' sizes, the whole
// gathered (or summed) tensor, as models/context_parallel.hpp counts them.
#pragma once

#include <cstdint>
#include <span>

#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/runtime/action_timer.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec::cpu {

class TimedContextParallel final : public ContextParallelComm {
 public:
  TimedContextParallel(ContextParallelComm& group, ActionTimer& timer, schedules::Rank rank)
      : group_(group), timer_(timer), rank_(rank) {}

  [[nodiscard]] int size() const override { return group_.size(); }
  [[nodiscard]] int rank() const override { return group_.rank(); }
  void all_gather(std::span<const float> mine, std::span<float> all) override {
    const auto start = ActionTimer::Clock::now();
    group_.all_gather(mine, all);
    record("all-gather", all.size_bytes(), start);
  }
  void reduce_scatter_sum(std::span<const float> all, std::span<float> mine) override {
    const auto start = ActionTimer::Clock::now();
    group_.reduce_scatter_sum(all, mine);
    record("reduce-scatter", all.size_bytes(), start);
  }

 private:
  void record(const char* collective, std::size_t bytes, ActionTimer::Clock::time_point start) {
    timer_.record_collective(rank_, timelines::CollectiveGroup::context, collective, static_cast<std::int64_t>(bytes),
                             start, ActionTimer::Clock::now());
  }

  ContextParallelComm& group_;
  ActionTimer& timer_;
  schedules::Rank rank_;
};

}  // namespace gpipe::exec::cpu
