// A profile of the user's own PyTorch model (`gpipe-sim profile
// --from-torch-trace`), from profiler traces of a few of its training steps on
// one CPU (interop/kineto_trace.hpp), one trace per micro-batch size.
//
// The layers are the user's modules: the "nn.Module: Block_0" events that
// PyTorch writes for an eager model profiled with with_stack=True, or the
// record_function labels the user puts around each layer. `layers` (an
// ECMAScript regex matched against the whole name, "Block_0" or a label)
// picks them, the outermost match where matches nest; without it, the
// children of the outermost module (the model). In each step
// (interop/torch_steps.hpp: ProfilerStep#N spans, else each run of the
// model's forward, else each optimizer step), per layer:
// - forward: the summed time of the ops the layer's span holds (its
//   top-level cpu_op events; Python's own time between them is not a layer's);
// - backward: the autograd functions ("autograd::engine::evaluate_function:
//   XBackward0") whose sequence number is one of the layer's forward ops';
// - parameters: each AccumulateGrad (a parameter's gradient, its shape and
//   type from record_shapes) belongs to the layer whose backward ran just
//   before it, as the autograd engine runs it as soon as the gradient exists;
// - input bytes: the first tensor input of the layer's ops that is none of its
//   parameters' shapes; output bytes: the next layer's input (the last
//   layer's output is not in a trace, which records inputs only: 0);
// - activation bytes (profile_memory=True): what the layer's forward allocated
//   and still held when the backward began, less its output (which the next
//   layer keeps), plus its input (as gpipe counts it), at least the input.
// Times are the median over the steps, or the step asked for. The optimizer's step
// ("Optimizer.step#...") is measured whole and shared among the layers by
// parameter bytes. The profile's not_measured lists every such stand-in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "interop/kineto_trace.hpp"
#include "profiles/profile.hpp"

namespace gpipe::interop {

struct TorchTraceOptions {
  std::string layers;         // regex; empty: the model's children
  bool no_activation_bytes = false;  // a trace without memory events: each layer's input bytes instead
  std::string torch_version;  // what wrote the traces (they do not say); empty: "unknown"
  std::string model;          // the profile's model; empty: "torch:" and the outermost module's name
  // The step taken (1 = the first the trace splits into); nullopt: each time
  // is the median over the steps.
  std::optional<int> step;
};

struct TorchTrace {
  interop::KinetoTrace trace;
  int micro_batch_size = 0;
};

// Throws InputError naming the trace and what it lacks: no module events and
// no --layers, no layer found, no backward, a GPU trace, traces whose layers
// differ, sizes < 1 or repeated, no memory events without no_activation_bytes.
[[nodiscard]] profiles::Profile torch_trace_profile(const std::vector<TorchTrace>& traces, const TorchTraceOptions& options);

}  // namespace gpipe::interop
