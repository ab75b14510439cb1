// A PyTorch profiler trace of several training steps, split into its steps.
// A trace taken the ordinary way (no prof.step()) has no ProfilerStep#N spans,
// and read as one step it would hold several forwards: so the steps are, in
// this order of preference,
//   - the ProfilerStep#N spans (prof.step() under a profiler schedule);
//   - else each top-level run of the step's first layer-bearing span: the
//     model's outermost module forward ("nn.Module: GPT_0", with_stack=True),
//     or, with --layers, the first layer's own span (a record_function label
//     or module); a step runs from one such start to the next;
//   - else the optimizer's steps ("Optimizer.step#..."): a step ends with each;
//   - else the whole trace, one step.
// The spans that split are taken on one thread, one after another, and not
// inside the backward's autograd functions (where activation checkpointing
// runs a layer's forward again).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "interop/kineto_trace.hpp"

namespace gpipe::interop {

struct TraceStep {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  // inclusive: the events that start and end in [start, end] are the step's
};

// TraceSteps::by for a trace split by its ProfilerStep#N spans.
inline constexpr std::string_view kMarkedSteps = "ProfilerStep#N spans";

struct TraceSteps {
  std::vector<TraceStep> steps;  // in time order, disjoint; empty when the trace has no events
  // How they were found, for the profile's record: "ProfilerStep#N spans",
  // "the forward of module GPT_0", "the span of layer0", "Optimizer.step#
  // spans", or "the whole trace (no step markers)".
  std::string by;
};

// The ProfilerStep#N spans prof.step() wrote, in time order; empty when none.
[[nodiscard]] std::vector<const KinetoEvent*> profiler_step_spans(const KinetoTrace& trace);

// `layers`: the --layers pattern, or none (the model's children).
[[nodiscard]] TraceSteps split_trace_steps(const KinetoTrace& trace, const std::optional<std::regex>& layers);

}  // namespace gpipe::interop
