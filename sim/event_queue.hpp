// A tiny discrete-event queue, after astra-network-analytical's: events are
// kept in a binary heap keyed by (time, sequence), so events at the same time
// run in the order they were scheduled and every run is deterministic.
#pragma once

#include <cassert>
#include <cstdint>
#include <queue>
#include <vector>

namespace gpipe::sim {

template <class Payload>
class EventQueue {
 public:
  struct Event {
    std::int64_t time_ns;
    std::uint64_t sequence;
    Payload payload;
  };

  void schedule(std::int64_t time_ns, Payload payload) {
    assert(time_ns >= now_ && "time never runs backwards");
    heap_.push(Event{time_ns, next_sequence_++, payload});
  }

  // Removes and returns the earliest event, advancing the clock to it.
  [[nodiscard]] Event proceed() {
    Event e = heap_.top();
    heap_.pop();
    assert(e.time_ns >= now_);
    now_ = e.time_ns;
    return e;
  }

  [[nodiscard]] bool finished() const { return heap_.empty(); }
  [[nodiscard]] std::int64_t now() const { return now_; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.sequence > b.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::int64_t now_ = 0;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace gpipe::sim
