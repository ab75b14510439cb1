// Where a worker keeps the data between the actions of its rank, keyed by
// MessageTag: the output of F(s,m) until F(s+1,m) on the same rank or
// SEND_F(s,m) takes it, a received message until its F or B takes it, and the
// same for gradients. Value is the backend's Message (exec/runtime/link.hpp):
// a host tensor on the CPU, a device tensor and its arrival event on a GPU.
// A valid schedule
// produces each value once and consumes it once; anything else is a logic
// error naming the message (and the action that needed it).
#pragma once

#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "exec/runtime/message.hpp"
#include "schedules/action.hpp"

namespace gpipe::exec {

template <class Value>
class MessageSlots {
 public:
  void put(const MessageTag& tag, Value value) {
    if (!slots_.try_emplace(tag, std::move(value)).second) {
      throw std::logic_error(fmt::format("the {} was produced twice", to_string(tag)));
    }
  }

  [[nodiscard]] Value take(const MessageTag& tag, const schedules::Action& action) {
    auto it = slots_.find(tag);
    if (it == slots_.end()) {
      throw std::logic_error(
          fmt::format("{} needs the {}, which is not here", to_string(action), to_string(tag)));
    }
    Value value = std::move(it->second);
    slots_.erase(it);
    return value;
  }

  // At the end of a step: every value produced was consumed.
  void expect_empty() const {
    if (!slots_.empty()) {
      throw std::logic_error(
          fmt::format("the {} was produced but never consumed", to_string(slots_.begin()->first)));
    }
  }

  void clear() { slots_.clear(); }

 private:
  std::map<MessageTag, Value> slots_;
};

}  // namespace gpipe::exec
