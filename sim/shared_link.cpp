#include "sim/shared_link.hpp"

#include <algorithm>
#include <cassert>

namespace gpipe::sim {
namespace {

// Far below INT64_MAX (9.2e18), with room for one more transfer's work.
constexpr std::int64_t kRebaseUnits = std::int64_t{1} << 60;

// Service (units) each of n draining transfers gets in dt ns: floor(dt * Q / n),
// split so that dt * Q never overflows for any dt a simulation reaches.
std::int64_t share_units(std::int64_t dt, std::int64_t n) {
  const std::int64_t q = SharedLink::kUnitsPerNs;
  return (dt / n) * q + (dt % n) * q / n;
}

// Whole ns until n draining transfers each get `units` more: ceil(units * n / Q).
std::int64_t ns_for_units(std::int64_t units, std::int64_t n) {
  const std::int64_t q = SharedLink::kUnitsPerNs;
  return (units / q) * n + ((units % q) * n + q - 1) / q;
}

}  // namespace

void SharedLink::send(std::int64_t now_ns, std::int64_t work_ns, Tag tag) {
  advance(now_ns);
  waiting_.push_back(Waiting{now_ns + latency_ns_, std::max<std::int64_t>(work_ns, 0), now_ns, tag});
  if (latency_ns_ == 0) advance(now_ns);  // drains at once
}

std::int64_t SharedLink::next_change_ns() const {
  std::int64_t t = waiting_.empty() ? kNever : waiting_.front().drain_at_ns;
  if (!draining_.empty()) {
    const std::int64_t left = std::max<std::int64_t>(draining_.front().finish_units - served_units_, 0);
    t = std::min(t, now_ns_ + ns_for_units(left, static_cast<std::int64_t>(draining_.size())));
  }
  return t;
}

std::int64_t SharedLink::next_event_ns() const {
  return completed_.empty() ? next_change_ns() : now_ns_;
}

void SharedLink::step_to(std::int64_t t_ns) {
  assert(t_ns >= now_ns_ && "time never runs backwards");
  if (draining_.empty()) {
    served_units_ = 0;  // idle: restart V so it never grows without bound
  } else {
    served_units_ += share_units(t_ns - now_ns_, static_cast<std::int64_t>(draining_.size()));
    if (served_units_ > kRebaseUnits) {
      // A long busy spell: shift V and every finish down alike (order kept).
      for (Draining& d : draining_) d.finish_units -= served_units_;
      served_units_ = 0;
    }
  }
  now_ns_ = t_ns;
}

void SharedLink::advance(std::int64_t now_ns) {
  for (std::int64_t t = next_change_ns(); t <= now_ns; t = next_change_ns()) {
    step_to(t);
    // Latency over: start draining at the current V.
    while (!waiting_.empty() && waiting_.front().drain_at_ns <= t) {
      const Waiting& w = waiting_.front();
      draining_.push_back(Draining{served_units_ + w.work_ns * kUnitsPerNs, w.sent_ns, next_sequence_++, w.tag});
      std::push_heap(draining_.begin(), draining_.end(), LaterFinish{});
      waiting_.pop_front();
    }
    while (!draining_.empty() && draining_.front().finish_units <= served_units_) {
      std::pop_heap(draining_.begin(), draining_.end(), LaterFinish{});
      const Draining& d = draining_.back();
      completed_.push_back(Completed{d.tag, d.sent_ns, t});
      draining_.pop_back();
    }
  }
  step_to(now_ns);
}

}  // namespace gpipe::sim
