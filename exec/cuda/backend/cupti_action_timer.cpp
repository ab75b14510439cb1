#include "exec/cuda/backend/cupti_action_timer.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace gpipe::exec::cuda {

CuptiActionTimer::CuptiActionTimer(int num_ranks, cupti::ActivitySource& source,
                                   std::function<std::int64_t()> now_ns, int measured_steps)
    : DeviceTimer(num_ranks),
      source_(source), now_ns_(std::move(now_ns)),
      slots_(static_cast<std::size_t>(std::max(measured_steps, 0))) {}

std::uint64_t CuptiActionTimer::external_id(schedules::Rank rank, int slot, std::size_t index) {
  return static_cast<std::uint64_t>(slot) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(rank.value) * 1'000'000ULL + index + 1;
}

CuptiActionTimer::Slot& CuptiActionTimer::slot(int index) {
  return const_cast<Slot&>(std::as_const(*this).slot(index));
}

const CuptiActionTimer::Slot& CuptiActionTimer::slot(int index) const {
  if (index < 0 || static_cast<std::size_t>(index) >= slots_.size()) {
    throw std::out_of_range(fmt::format("CUPTI timer: no measured step {}", index));
  }
  return slots_[static_cast<std::size_t>(index)];
}

void CuptiActionTimer::start_step(schedules::Rank /*rank*/, int index, Clock::time_point /*start*/) {
  const std::int64_t now = now_ns_();
  std::scoped_lock lock(mutex_);
  Slot& s = slot(index);
  s.origin_ns = s.origin_ns < 0 ? now : std::min(s.origin_ns, now);
}

void CuptiActionTimer::begin_on(const ActionMark& mark, StreamHandle /*stream*/) {
  const std::uint64_t id = external_id(mark.rank, mark.slot, mark.index);
  {
    std::scoped_lock lock(mutex_);
    slot(mark.slot).ids[id] = cupti::ActionRef{mark.rank, mark.action};
  }
  source_.push_external_id(id);
}

void CuptiActionTimer::end_on(const ActionMark& mark, StreamHandle /*stream*/) {
  const std::uint64_t popped = source_.pop_external_id();
  if (popped != external_id(mark.rank, mark.slot, mark.index)) {
    throw std::logic_error(fmt::format("CUPTI timer: popped external id {} for action {} of rank {}",
                                       popped, mark.index, mark.rank.value));
  }
}

void CuptiActionTimer::finish() {
  if (finished_) return;
  records_ = source_.stop();
  finished_ = true;
}

const cupti::ExternalIdMap& CuptiActionTimer::ids(int index) const {
  return slot(index).ids;
}

std::int64_t CuptiActionTimer::origin_ns(int index) const {
  return slot(index).origin_ns;
}

cupti::GpuTimeline CuptiActionTimer::gpu_timeline(int index) const {
  if (!finished_) throw std::logic_error("CUPTI timer: read before finish()");
  return cupti::build_gpu_timeline(records_, ids(index), origin_ns(index));
}

MeasuredIntervals CuptiActionTimer::intervals(int index) {
  finish();
  MeasuredIntervals out;
  for (const auto& t : gpu_timeline(index).actions) {
    out[{t.rank, t.action}] = Interval{t.start_ns, t.end_ns};
  }
  return out;
}

cupti::ActivityRecords records_of(const cupti::ActivityRecords& records,
                                  const cupti::ExternalIdMap& ids) {
  const auto external_of = cupti::correlation_to_external(records);
  const auto claimed = [&](std::uint32_t correlation) {
    const auto e = external_of.find(correlation);
    return e != external_of.end() && ids.contains(e->second);
  };
  cupti::ActivityRecords out;
  out.dropped = records.dropped;
  std::ranges::copy_if(records.kernels, std::back_inserter(out.kernels),
                       [&](const auto& k) { return claimed(k.correlation); });
  std::ranges::copy_if(records.memcpys, std::back_inserter(out.memcpys),
                       [&](const auto& m) { return claimed(m.correlation); });
  std::ranges::copy_if(records.external, std::back_inserter(out.external),
                       [&](const auto& e) { return ids.contains(e.external_id); });
  return out;
}

}  // namespace gpipe::exec::cuda
