#include "exec/runtime/host_timer.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace gpipe::exec {

namespace {

std::int64_t ns_since(ActionTimer::Clock::time_point origin) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ActionTimer::Clock::now() - origin)
      .count();
}

}  // namespace

HostTimer::HostTimer(int num_ranks, int measured_steps) : ranks_(static_cast<std::size_t>(num_ranks)) {
  for (RankRecord& r : ranks_) {
    r.steps.resize(static_cast<std::size_t>(measured_steps));
    r.reductions.resize(static_cast<std::size_t>(measured_steps));
    r.collectives.resize(static_cast<std::size_t>(measured_steps));
  }
}

HostTimer::RankRecord& HostTimer::record(schedules::Rank rank) {
  if (rank.value < 0 || rank.at() >= ranks_.size()) {
    throw std::out_of_range(fmt::format("host timer: no rank {}", rank.value));
  }
  return ranks_[rank.at()];
}

void HostTimer::start_step(schedules::Rank rank, int slot, Clock::time_point start) {
  RankRecord& r = record(rank);
  r.origin = start;
  r.previous_start = -1;
  r.steps.at(static_cast<std::size_t>(slot)).clear();
  r.reductions.at(static_cast<std::size_t>(slot)).clear();
  r.collectives.at(static_cast<std::size_t>(slot)).clear();
  r.open_slot = -1;
}

void HostTimer::begin(const ActionMark& mark) {
  RankRecord& r = record(mark.rank);
  r.open_start = std::max(ns_since(r.origin), r.previous_start + 1);
  r.previous_start = r.open_start;
  r.open_action = mark.action;
  r.open_slot = mark.slot;
}

void HostTimer::end(const ActionMark& mark) {
  RankRecord& r = record(mark.rank);
  const std::int64_t end = std::max(ns_since(r.origin), r.open_start);
  r.steps.at(static_cast<std::size_t>(mark.slot)).push_back({mark.action, {r.open_start, end}});
  r.open_slot = -1;
}

void HostTimer::record_reduction(const ActionMark& mark, Clock::time_point start, Clock::time_point end) {
  RankRecord& r = record(mark.rank);
  const auto since_origin = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - r.origin).count();
  };
  const std::int64_t from = since_origin(start);
  r.reductions.at(static_cast<std::size_t>(mark.slot)).push_back({mark.action, {from, std::max(from, since_origin(end))}});
}

void HostTimer::record_collective(schedules::Rank rank, timelines::CollectiveGroup group,
                                  std::string_view collective, std::int64_t bytes, Clock::time_point start,
                                  Clock::time_point end) {
  RankRecord& r = record(rank);
  if (r.open_slot < 0) return;  // outside a measured action
  const auto since_origin = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - r.origin).count();
  };
  const std::int64_t from = since_origin(start);
  r.collectives.at(static_cast<std::size_t>(r.open_slot))
      .push_back({.rank = rank,
                  .within = r.open_action,
                  .collective = std::string(collective),
                  .bytes = bytes,
                  .start_ns = from,
                  .end_ns = std::max(from, since_origin(end)),
                  .group = group});
}

std::vector<timelines::CollectiveSpan> HostTimer::collectives(int slot) {
  std::vector<timelines::CollectiveSpan> out;
  for (const RankRecord& r : ranks_) {
    const auto& spans = r.collectives.at(static_cast<std::size_t>(slot));
    out.insert(out.end(), spans.begin(), spans.end());
  }
  return out;
}

MeasuredIntervals HostTimer::collect(Records RankRecord::*which, int slot) const {
  MeasuredIntervals out;
  for (std::size_t rank = 0; rank < ranks_.size(); ++rank) {
    for (const auto& [action, interval] : (ranks_[rank].*which).at(static_cast<std::size_t>(slot))) {
      out[{schedules::Rank{static_cast<int>(rank)}, action}] = interval;
    }
  }
  return out;
}

MeasuredIntervals HostTimer::reductions(int slot) { return collect(&RankRecord::reductions, slot); }

MeasuredIntervals HostTimer::intervals(int slot) { return collect(&RankRecord::steps, slot); }

}  // namespace gpipe::exec
