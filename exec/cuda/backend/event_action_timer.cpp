#include "exec/cuda/backend/event_action_timer.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

namespace {

void record(const Event& event, StreamHandle stream) {
  GPIPE_CUDA_CHECK(cudaEventRecord(event.get(), stream));
}

}  // namespace

EventActionTimer::EventActionTimer(int num_ranks, int measured_steps)
    : DeviceTimer(num_ranks),
      slots_(static_cast<std::size_t>(num_ranks) * static_cast<std::size_t>(measured_steps)) {}

EventActionTimer::RankSlot& EventActionTimer::at(schedules::Rank rank, int slot) {
  const auto i = static_cast<std::size_t>(slot) * static_cast<std::size_t>(num_ranks()) + rank.at();
  if (rank.value < 0 || rank.value >= num_ranks() || slot < 0 || i >= slots_.size()) {
    throw std::out_of_range(
        fmt::format("event timer: no rank {} in measured step {}", rank.value, slot));
  }
  return slots_[i];
}

void EventActionTimer::start_step(schedules::Rank rank, int slot, Clock::time_point /*start*/) {
  auto origin = std::make_unique<Event>(true);
  record(*origin, compute_stream(rank));
  std::scoped_lock lock(mutex_);
  at(rank, slot).origin = std::move(origin);
}

void EventActionTimer::begin_on(const ActionMark& mark, StreamHandle stream) {
  Marks marks{mark.action, std::make_unique<Event>(true), std::make_unique<Event>(true)};
  record(*marks.start, stream);
  std::scoped_lock lock(mutex_);
  at(mark.rank, mark.slot).actions[mark.index] = std::move(marks);
}

void EventActionTimer::end_on(const ActionMark& mark, StreamHandle stream) {
  std::scoped_lock lock(mutex_);
  record(*at(mark.rank, mark.slot).actions.at(mark.index).end, stream);
}

MeasuredIntervals EventActionTimer::intervals(int slot) {
  std::scoped_lock lock(mutex_);
  MeasuredIntervals out;
  for (int r = 0; r < num_ranks(); ++r) {
    const RankSlot& rs = at(schedules::Rank{r}, slot);
    if (rs.origin == nullptr) {
      // Ranks of other processes never start here and have no marks.
      if (!rs.actions.empty())
        throw std::logic_error(fmt::format("event timer: rank {} never started step {}", r, slot));
      continue;
    }
    for (const auto& [index, marks] : rs.actions) {
      out[{schedules::Rank{r}, marks.action}] = Interval{elapsed_ns(*rs.origin, *marks.start),
                                           elapsed_ns(*rs.origin, *marks.end)};
    }
  }
  return out;
}

}  // namespace gpipe::exec::cuda
