#include "timelines/trace_lint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpipe::timelines {
namespace {

using nlohmann::json;

// As Perfetto reads a time: us, rounded to the nearest ns (CoerceToTs).
std::optional<std::int64_t> ns_of(const json& ev, const char* key) {
  const auto it = ev.find(key);
  if (it == ev.end() || !it->is_number()) return std::nullopt;
  const double us = it->get<double>();
  if (!std::isfinite(us)) return std::nullopt;
  return std::llround(us * 1000.0);
}

std::optional<std::int64_t> integer_of(const json& ev, const char* key) {
  const auto it = ev.find(key);
  if (it == ev.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

// A string field, or "" when it is missing or not a string (the lint reads
// any JSON, and a wrong type is a finding of another rule, never a throw).
std::string string_of(const json& ev, const char* key) {
  const auto it = ev.find(key);
  return it != ev.end() && it->is_string() ? it->get<std::string>() : std::string();
}

struct Slice {
  std::int64_t start = 0, end = 0;
  std::size_t index = 0;
};
using Thread = std::pair<std::int64_t, std::int64_t>;  // pid, tid

class Lint {
 public:
  explicit Lint(const json& trace) {
    const auto events = trace.find("traceEvents");
    if (events == trace.end() || !events->is_array()) {
      say("the trace has no traceEvents array");
      return;
    }
    for (std::size_t i = 0; i < events->size(); ++i) event(i, (*events)[i]);
    check_slices();
    check_flows();
  }

  std::vector<std::string> found() && { return std::move(found_); }

 private:
  template <typename... Args>
  void say(fmt::format_string<Args...> format, Args&&... args) {
    found_.push_back(fmt::format(format, std::forward<Args>(args)...));
  }

  std::optional<Thread> thread_of(std::size_t i, const json& ev) {
    const auto pid = integer_of(ev, "pid");
    const auto tid = integer_of(ev, "tid");
    if (!pid || *pid < 0) {
      say("traceEvents[{}]: pid is not an integer >= 0", i);
      return std::nullopt;
    }
    if (!tid || *tid < 1) {
      say("traceEvents[{}]: tid {} is not an integer >= 1 (Perfetto reads tid 0 as none, and moves the "
          "event to the thread tid == pid)",
          i, ev.contains("tid") ? ev["tid"].dump() : "missing");
      return std::nullopt;
    }
    return Thread{*pid, *tid};
  }

  void event(std::size_t i, const json& ev) {
    if (!ev.is_object() || !ev.contains("ph") || !ev["ph"].is_string()) {
      say("traceEvents[{}]: not an event with a ph", i);
      return;
    }
    const std::string ph = ev["ph"];
    if (ph == "X") {
      slice(i, ev);
    } else if (ph == "s" || ph == "f") {
      flow(i, ev, ph);
    } else if (ph == "C") {
      counter(i, ev);
    } else if (ph == "M") {
      metadata(i, ev);
    }
  }

  void slice(std::size_t i, const json& ev) {
    const auto thread = thread_of(i, ev);
    const auto ts = ns_of(ev, "ts");
    const auto dur = ns_of(ev, "dur");
    if (!ts || *ts < 0) say("traceEvents[{}]: ts is not a finite number >= 0", i);
    if (!dur || *dur < 0) say("traceEvents[{}]: dur is not a finite number >= 0", i);
    if (thread && ts && dur && *ts >= 0 && *dur >= 0) slices_[*thread].push_back({*ts, *ts + *dur, i});
  }

  void flow(std::size_t i, const json& ev, const std::string& ph) {
    const auto thread = thread_of(i, ev);
    const auto ts = ns_of(ev, "ts");
    if (!ts) say("traceEvents[{}]: ts is not a finite number", i);
    if (ph == "f" && string_of(ev, "bp") != "e") {
      say("traceEvents[{}]: a flow's f without \"bp\": \"e\" binds to the next slice on its thread, not "
          "its own",
          i);
    }
    if (!ev.contains("id")) {
      say("traceEvents[{}]: a flow event without an id", i);
      return;
    }
    const auto key = std::tuple{ev["id"].dump(), string_of(ev, "cat"), string_of(ev, "name")};
    auto& ends = flows_[key];
    auto& slot = ph == "s" ? ends.first : ends.second;
    if (slot) {
      say("traceEvents[{}]: flow {} has a second {} (Perfetto: flow_duplicate_id)", i, ev["id"].dump(), ph);
      return;
    }
    if (thread && ts) slot = FlowEnd{*thread, *ts, i};
  }

  void counter(std::size_t i, const json& ev) {
    const auto args = ev.find("args");
    if (args == ev.end() || !args->is_object() || args->empty()) {
      say("traceEvents[{}]: a counter without args", i);
      return;
    }
    for (const auto& [key, value] : args->items()) {
      if (!value.is_number() || !std::isfinite(value.get<double>())) {
        say("traceEvents[{}]: counter value args.{} is not a finite number", i, key);
      }
    }
  }

  void metadata(std::size_t i, const json& ev) {
    const std::string name = string_of(ev, "name");
    if (name != "process_name" && name != "thread_name") return;
    const auto args = ev.find("args");
    if (args == ev.end() || !args->is_object() || !args->contains("name") || !(*args)["name"].is_string() ||
        (*args)["name"].get<std::string>().empty()) {
      say("traceEvents[{}]: {} without a non-empty args.name", i, name);
      return;
    }
    const auto pid = integer_of(ev, "pid").value_or(-1);
    const auto tid = name == "thread_name" ? integer_of(ev, "tid").value_or(-1) : 0;
    if (name == "thread_name" && tid < 1) say("traceEvents[{}]: thread_name of tid {} (not >= 1)", i, tid);
    if (!names_.insert({name, pid, tid}).second) {
      say("traceEvents[{}]: a second {} for pid {}{}", i, name, pid,
          name == "thread_name" ? fmt::format(" tid {}", tid) : std::string());
    }
  }

  // Nested or disjoint, per thread: sorted by start (longer first on a tie,
  // as Perfetto's sorter does), each slice must end within every open one.
  void check_slices() {
    for (auto& [thread, slices] : slices_) {
      std::ranges::sort(slices, [](const Slice& a, const Slice& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      std::vector<const Slice*> open;
      for (const Slice& s : slices) {
        while (!open.empty() && open.back()->end <= s.start) open.pop_back();
        if (!open.empty() && s.end > open.back()->end) {
          say("traceEvents[{}]: slice on pid {} tid {} overlaps traceEvents[{}] without nesting (Perfetto drops "
              "it: slice_drop_overlapping_complete_event)",
              s.index, thread.first, thread.second, open.back()->index);
        }
        open.push_back(&s);
      }
    }
  }

  // The slice a flow event at `ts` binds to: the last slice on its thread
  // that started at or before `ts`, if it is still open then (or, with no
  // later slice started, the one Perfetto's stack still holds).
  bool inside_its_slice(const Thread& thread, std::int64_t ts) const {
    const auto it = slices_.find(thread);
    if (it == slices_.end()) return false;
    const Slice* last = nullptr;
    for (const Slice& s : it->second) {
      if (s.start <= ts && (last == nullptr || s.start >= last->start)) last = &s;
    }
    return last != nullptr && ts <= last->end;
  }

  void check_flows() {
    for (const auto& [key, ends] : flows_) {
      const auto& [start, finish] = ends;
      const std::string& id = std::get<0>(key);
      if (!start || !finish) {
        say("flow {}: {} without its {}", id, start ? "an s" : "an f", start ? "f" : "s");
        continue;
      }
      if (finish->ts < start->ts) {
        say("traceEvents[{}]: flow {} ends at {:.3f} us, before it starts at {:.3f} us (Perfetto: "
            "flow_end_without_start, the arrow is dropped)",
            finish->index, id, finish->ts / 1e3, start->ts / 1e3);
      }
      for (const FlowEnd* end : {&*start, &*finish}) {
        if (!inside_its_slice(end->thread, end->ts)) {
          say("traceEvents[{}]: flow {} at {:.3f} us is in no slice of pid {} tid {} (Perfetto: "
              "flow_no_enclosing_slice)",
              end->index, id, end->ts / 1e3, end->thread.first, end->thread.second);
        }
      }
    }
  }

  struct FlowEnd {
    Thread thread;
    std::int64_t ts = 0;
    std::size_t index = 0;
  };

  std::vector<std::string> found_;
  std::map<Thread, std::vector<Slice>> slices_;
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<std::optional<FlowEnd>, std::optional<FlowEnd>>>
      flows_;
  std::set<std::tuple<std::string, std::int64_t, std::int64_t>> names_;
};

}  // namespace

std::vector<std::string> lint_chrome_trace(const json& trace) { return Lint(trace).found(); }

}  // namespace gpipe::timelines
