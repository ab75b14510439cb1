// One directed link whose bandwidth is shared between the transfers on it
// (LinkSharing::shared, docs/design.md's "link bandwidth shared between concurrent
// transfers"): processor sharing instead of a FIFO. A transfer first waits
// out the link's latency, then drains; while n transfers drain, each drains
// at 1/n of the full bandwidth, so completion times move as transfers join
// and leave.
//
// Work is counted in solo ns: a transfer of `work_ns` would drain in work_ns
// alone (the engine uses transfer_ns(bytes) - transfer_ns(0) of the link
// model, so one transfer at a time takes exactly what the FIFO link takes).
// Integer arithmetic, deterministic: service is kept in units of 1/720720 of
// a solo ns (720720 = lcm(1..16)), so sharing among up to 16 transfers is
// exact; with more, a share rounds down to the unit. Completion times round
// up to the next whole ns (the share of that last ns is not handed back).
// One transfer's work must stay under about 1e13 ns (3 hours alone).
// The textbook virtual-time form of processor sharing: V is the service each
// draining transfer has had since the link last sat idle, and a transfer
// that starts draining at V with work w completes when V reaches V + w.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

namespace gpipe::sim {

class SharedLink {
 public:
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  static constexpr std::int64_t kUnitsPerNs = 720720;  // lcm(1..16)

  // Who sent a transfer to whom (the engine's node ids), handed back on completion.
  struct Tag {
    int producer;
    int consumer;
  };
  struct Completed {
    Tag tag;
    std::int64_t sent_ns;
    std::int64_t done_ns;
  };

  explicit SharedLink(std::int64_t latency_ns) : latency_ns_(latency_ns) {}

  // A transfer sent at now_ns (never before an earlier call's time): after
  // the latency it drains work_ns of solo time. `tag` comes back with it.
  void send(std::int64_t now_ns, std::int64_t work_ns, Tag tag);

  // Runs the link up to now_ns; the transfers that completed by then, in
  // completion order (ties: the one sent first), are in completed().
  void advance(std::int64_t now_ns);
  [[nodiscard]] const std::vector<Completed>& completed() const { return completed_; }
  void clear_completed() { completed_.clear(); }

  // When the link next changes (a transfer starts draining or completes), or
  // kNever; the time of the last advance while completed() is not empty.
  [[nodiscard]] std::int64_t next_event_ns() const;
  [[nodiscard]] std::int64_t latency_ns() const { return latency_ns_; }
  [[nodiscard]] std::size_t in_flight() const { return waiting_.size() + draining_.size(); }

 private:
  struct Waiting {
    std::int64_t drain_at_ns;
    std::int64_t work_ns;
    std::int64_t sent_ns;
    Tag tag;
  };
  struct Draining {
    std::int64_t finish_units;  // V at which it completes
    std::int64_t sent_ns;
    std::uint64_t sequence;     // send order, for ties
    Tag tag;
  };
  struct LaterFinish {
    bool operator()(const Draining& a, const Draining& b) const {
      return a.finish_units != b.finish_units ? a.finish_units > b.finish_units : a.sequence > b.sequence;
    }
  };

  [[nodiscard]] std::int64_t next_change_ns() const;
  void step_to(std::int64_t t_ns);

  std::int64_t latency_ns_;
  std::int64_t now_ns_ = 0;
  std::int64_t served_units_ = 0;  // V
  std::uint64_t next_sequence_ = 0;
  std::deque<Waiting> waiting_;     // in their latency, in send order (= drain order)
  std::vector<Draining> draining_;  // a min-heap on (finish_units, sequence)
  std::vector<Completed> completed_;
};

}  // namespace gpipe::sim
