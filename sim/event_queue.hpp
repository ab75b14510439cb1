// The engine's event queue: an indexed binary min-heap over a fixed set of
// event sources (each rank's compute stream, each shared link), each with at
// most one pending event. A rank runs one action at a time and a link reports
// only its next change, so the heap holds a few entries per rank however long
// the schedule, and rescheduling a source moves its entry instead of leaving
// a stale one behind. Events are ordered by (time, source): ties break the
// same way on every run, so the engine stays deterministic.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

namespace gpipe::sim {

class EventQueue {
 public:
  struct Event {
    std::int64_t time_ns;
    int source;
  };

  explicit EventQueue(int num_sources) : position_(static_cast<std::size_t>(num_sources), kAbsent) {
    heap_.reserve(static_cast<std::size_t>(num_sources));
  }

  // Sets the source's pending event to `time_ns`, replacing any it had.
  void schedule(int source, std::int64_t time_ns) {
    assert(time_ns >= now_ && "time never runs backwards");
    int& at = position_[static_cast<std::size_t>(source)];
    if (at == kAbsent) {
      at = static_cast<int>(heap_.size());
      heap_.push_back(Event{time_ns, source});
      sift_up(at);
      return;
    }
    const bool earlier = earlier_than(Event{time_ns, source}, heap_[static_cast<std::size_t>(at)]);
    heap_[static_cast<std::size_t>(at)].time_ns = time_ns;
    if (earlier) {
      sift_up(at);
    } else {
      sift_down(at);
    }
  }

  // Drops the source's pending event, if it has one.
  void cancel(int source) {
    const int at = position_[static_cast<std::size_t>(source)];
    if (at == kAbsent) return;
    position_[static_cast<std::size_t>(source)] = kAbsent;
    const Event last = heap_.back();
    heap_.pop_back();
    if (at == static_cast<int>(heap_.size())) return;
    place(at, last);
    sift_down(at);
    sift_up(at);
  }

  [[nodiscard]] bool finished() const { return heap_.empty(); }
  [[nodiscard]] bool pending(int source) const {
    return position_[static_cast<std::size_t>(source)] != kAbsent;
  }
  [[nodiscard]] std::int64_t time_of(int source) const {
    return heap_[static_cast<std::size_t>(position_[static_cast<std::size_t>(source)])].time_ns;
  }

  // The earliest event, left in the queue (the caller reschedules or cancels
  // its source), and the clock advanced to it.
  [[nodiscard]] Event peek() {
    const Event e = heap_.front();
    assert(e.time_ns >= now_);
    now_ = e.time_ns;
    return e;
  }
  [[nodiscard]] std::int64_t now() const { return now_; }

 private:
  static constexpr int kAbsent = -1;

  static bool earlier_than(const Event& a, const Event& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.source < b.source;
  }
  void place(int at, const Event& e) {
    heap_[static_cast<std::size_t>(at)] = e;
    position_[static_cast<std::size_t>(e.source)] = at;
  }
  void sift_up(int at) {
    const Event e = heap_[static_cast<std::size_t>(at)];
    while (at > 0) {
      const int parent = (at - 1) / 2;
      if (!earlier_than(e, heap_[static_cast<std::size_t>(parent)])) break;
      place(at, heap_[static_cast<std::size_t>(parent)]);
      at = parent;
    }
    place(at, e);
  }
  void sift_down(int at) {
    const Event e = heap_[static_cast<std::size_t>(at)];
    const int size = static_cast<int>(heap_.size());
    for (;;) {
      int child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size &&
          earlier_than(heap_[static_cast<std::size_t>(child) + 1], heap_[static_cast<std::size_t>(child)])) {
        ++child;
      }
      if (!earlier_than(heap_[static_cast<std::size_t>(child)], e)) break;
      place(at, heap_[static_cast<std::size_t>(child)]);
      at = child;
    }
    place(at, e);
  }

  std::vector<Event> heap_;
  std::vector<int> position_;  // index of each source's event in heap_, or kAbsent
  std::int64_t now_ = 0;
};

}  // namespace gpipe::sim
