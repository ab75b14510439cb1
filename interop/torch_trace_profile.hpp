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
// model's forward, else each optimizer step) every ns is a layer's pass or
// the step's own, so that the profile holds the whole step. Per layer:
// - forward: its span (ops and the Python between them) and the time since
//   the previous layer's span ended; the last layer's also the time from its
//   end to the backward (a loss outside the model, the call into backward);
// - backward: each top-level autograd function ("autograd::engine::
//   evaluate_function: XBackward0") and the gap before it, by the sequence
//   number of the layer's forward op it has; an AccumulateGrad and a function
//   of no layer's op to the layer whose backward ran last (before any, the
//   last layer's);
// - parameters: each AccumulateGrad (a parameter's gradient, its shape and
//   type from record_shapes) belongs to the layer whose backward ran just
//   before it, as the autograd engine runs it as soon as the gradient exists;
// - input bytes: the first tensor input of the layer's ops that is none of its
//   parameters' shapes; output bytes: the next layer's input (the last
//   layer's output is not in a trace, which records inputs only: 0);
// - activation bytes (profile_memory=True): what the layer's forward allocated
//   and still held when the backward began, less its output (which the next
//   layer keeps), plus its input (as gpipe counts it), at least the input.
// Times are the median over the steps, or the step asked for. The step's own
// time (before its first layer, and after its backward: the optimizer's
// "Optimizer.step#...", zero_grad, the loop) is measured whole and shared
// among the layers by parameter bytes as optimizer_us. measured_from says how
// much of each trace's step the profile holds; not_measured lists every
// stand-in.
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
