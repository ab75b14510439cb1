#include "interop/torch_steps.hpp"

#include <algorithm>
#include <limits>
#include <string_view>

#include <fmt/format.h>

namespace gpipe::interop {

namespace {

// Each event that `accepts` takes, on the first such event's thread, that
// starts after the one taken before it has ended (so not nested in it), and
// that no autograd function of that thread holds: a layer that activation
// checkpointing recomputes inside the backward opens no step. The events come
// sorted by start, an enclosing one first.
template <class F>
std::vector<const KinetoEvent*> top_level(const KinetoTrace& trace, F&& accepts) {
  std::vector<const KinetoEvent*> out;
  std::int64_t backward_until = std::numeric_limits<std::int64_t>::min();  // the latest end of an autograd function
  for (const KinetoEvent& e : trace.events) {
    const bool same_thread = out.empty() || (e.process == out.front()->process && e.thread == out.front()->thread);
    if (same_thread && e.category == "cpu_op" && e.name.starts_with(kBackwardPrefix)) {
      backward_until = std::max(backward_until, e.end_ns);
    }
    if (!accepts(e) || !same_thread || e.start_ns < backward_until) continue;
    if (!out.empty() && e.start_ns <= out.back()->end_ns) continue;
    out.push_back(&e);
  }
  return out;
}

std::int64_t trace_end(const KinetoTrace& trace) {
  std::int64_t end = trace.events.front().end_ns;
  for (const KinetoEvent& e : trace.events) end = std::max(end, e.end_ns);
  return end;
}

// Steps that start at each of `starts` and run to the next (the last to the trace's end).
std::vector<TraceStep> from_starts(const std::vector<const KinetoEvent*>& starts, std::int64_t end) {
  std::vector<TraceStep> out;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::int64_t next = k + 1 < starts.size() ? starts[k + 1]->start_ns - 1 : end;
    out.push_back({starts[k]->start_ns, std::max(starts[k]->start_ns, next)});
  }
  return out;
}

}  // namespace

std::vector<const KinetoEvent*> profiler_step_spans(const KinetoTrace& trace) {
  std::vector<const KinetoEvent*> out;
  for (const KinetoEvent& e : trace.events) {
    if (e.category == "user_annotation" && e.name.starts_with(kProfilerStepPrefix)) out.push_back(&e);
  }
  return out;
}

TraceSteps split_trace_steps(const KinetoTrace& trace, const std::optional<std::regex>& layers) {
  TraceSteps out;
  if (trace.events.empty()) return out;
  const std::int64_t end = trace_end(trace);
  for (const KinetoEvent* e : profiler_step_spans(trace)) out.steps.push_back({e->start_ns, e->end_ns});
  if (!out.steps.empty()) {
    out.by = std::string(kMarkedSteps);
    return out;
  }
  // The span that opens each forward: the first layer's (with --layers), else the model's.
  std::vector<const KinetoEvent*> opening;
  if (layers) {
    const auto matches = top_level(trace, [&](const KinetoEvent& e) {
      return (is_module_event(e) || is_user_label(e)) && std::regex_match(layer_name_of(e), *layers);
    });
    if (!matches.empty()) {
      const std::string first = layer_name_of(*matches.front());
      for (const KinetoEvent* m : matches) {
        if (layer_name_of(*m) == first) opening.push_back(m);
      }
      out.by = fmt::format("the span of layer {}", first);
    }
  } else {
    const auto modules = top_level(trace, is_module_event);
    if (!modules.empty()) {
      const std::string root = layer_name_of(*modules.front());
      for (const KinetoEvent* m : modules) {
        if (layer_name_of(*m) == root) opening.push_back(m);
      }
      out.by = fmt::format("the forward of module {}", root);
    }
  }
  if (opening.size() > 1) {
    out.steps = from_starts(opening, end);
    return out;
  }
  if (opening.size() == 1) {
    out.steps.push_back({trace.events.front().start_ns, end});
    out.by = "the whole trace (one forward)";
    return out;
  }
  const auto optimizer = top_level(trace, [](const KinetoEvent& e) {
    return e.category == "user_annotation" && e.name.starts_with(kOptimizerStepPrefix);
  });
  if (optimizer.size() > 1) {
    std::int64_t from = trace.events.front().start_ns;
    for (const KinetoEvent* o : optimizer) {
      out.steps.push_back({from, o->end_ns});
      from = o->end_ns + 1;
    }
    out.by = "Optimizer.step# spans";
    return out;
  }
  out.steps.push_back({trace.events.front().start_ns, end});
  out.by = "the whole trace (no step markers)";
  return out;
}

}  // namespace gpipe::interop
