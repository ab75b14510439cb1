#include "interop/torch_trace_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "interop/torch_steps.hpp"
#include "profiles/median_profile.hpp"

namespace gpipe::interop {

namespace {

using interop::KinetoEvent;
using interop::KinetoTrace;

bool is_op(const KinetoEvent& e) { return e.category == "cpu_op"; }
// "Block_0" -> "Block": the module's class; a label is its own kind.
std::string kind_of(const std::string& name, bool module) {
  if (!module) return "record_function";
  const std::size_t underscore = name.find_last_of('_');
  if (underscore == std::string::npos || underscore + 1 == name.size()) return name;
  const bool numbered = std::all_of(name.begin() + static_cast<std::ptrdiff_t>(underscore) + 1, name.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
  return numbered ? name.substr(0, underscore) : name;
}

// A profile's own bound on bytes (profiles/profile.cpp reads no more).
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;

// a + b, refusing what no profile holds (a trace's numbers are anyone's).
std::int64_t checked_sum(std::int64_t a, std::int64_t b, std::string_view origin) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum) || sum > kMaxBytes) {
    throw InputError(fmt::format("{}: a layer's bytes exceed 2^50", origin));
  }
  return sum;
}

std::int64_t tensor_bytes(const std::vector<std::int64_t>& dims, int element_bytes, std::string_view origin) {
  std::int64_t bytes = element_bytes;
  for (const std::int64_t d : dims) {
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxBytes) {
      throw InputError(fmt::format("{}: a tensor of {} elements' shape exceeds 2^50 bytes", origin, dims.size()));
    }
  }
  return bytes;
}

struct Span {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// One layer in one step.
struct LayerStep {
  std::string name;
  bool module = true;
  const KinetoEvent* span = nullptr;
  std::int64_t fwd_ns = 0;
  std::int64_t bwd_ns = 0;
  std::int64_t param_bytes = 0;
  std::set<std::vector<std::int64_t>> param_dims;
  std::int64_t input_bytes = 0;
  std::int64_t kept_bytes = 0;  // allocated in the forward, alive when the backward began
  std::string param_type;       // the first parameter's element type
};

struct StepMeasure {
  std::vector<LayerStep> layers;
  std::string root;                 // the outermost module, when modules were read
  std::int64_t optimizer_ns = 0;    // the optimizer's spans
  std::int64_t own_ns = 0;          // the step outside its forward and backward (the optimizer's included)
  std::int64_t outside_fwd_ns = 0;  // ops between the last layer and the backward (a loss outside the model)
  std::int64_t outside_bwd_ns = 0;  // autograd functions of no layer's op
  std::int64_t duration_ns = 0;     // the step's span
};

class TraceReader {
 public:
  TraceReader(const KinetoTrace& trace, const TorchTraceOptions& options) : trace_(trace), options_(options) {
    if (!options.layers.empty()) {
      try {
        pattern_.emplace(options.layers);
      } catch (const std::regex_error& e) {
        throw InputError(fmt::format("--layers: '{}' is not a regular expression: {}", options.layers, e.what()));
      }
    }
  }

  // Every step of the trace (interop/torch_steps.hpp), measured.
  [[nodiscard]] std::vector<StepMeasure> steps(std::string& split_by) const {
    const TraceSteps split = split_trace_steps(trace_, pattern_);
    split_by = split.by;
    std::vector<StepMeasure> out;
    for (std::size_t k = 0; k < split.steps.size(); ++k) {
      const TraceStep& t = split.steps[k];
      out.push_back(step({t.start_ns, t.end_ns}, k, split.by));
      out.back().duration_ns = t.end_ns - t.start_ns;
    }
    return out;
  }

 private:
  // The events that start in [from, to], in order.
  template <class F>
  void each_in(std::int64_t from, std::int64_t to, F&& f) const {
    auto it = std::ranges::lower_bound(trace_.events, from, {}, &KinetoEvent::start_ns);
    for (; it != trace_.events.end() && it->start_ns <= to; ++it) {
      if (it->end_ns <= to) f(*it);
    }
  }

  [[noreturn]] void fail(std::string_view why) const { throw InputError(fmt::format("{}: {}", trace_.origin, why)); }

  // The layers' spans of the step's forward.
  [[nodiscard]] std::vector<LayerStep> layer_spans(const Span& step, std::string& root) const {
    std::vector<const KinetoEvent*> modules;
    each_in(step.start_ns, step.end_ns, [&](const KinetoEvent& e) {
      if (is_module_event(e)) modules.push_back(&e);
    });
    std::vector<LayerStep> layers;
    const auto keep = [&](const KinetoEvent& e) {
      if (!layers.empty() && layers.back().span->encloses(e)) return;  // inside a layer kept already
      layers.push_back({.name = layer_name_of(e), .module = is_module_event(e), .span = &e});
    };
    if (!modules.empty()) root = layer_name_of(*modules.front());
    if (pattern_) {
      each_in(step.start_ns, step.end_ns, [&](const KinetoEvent& e) {
        if ((is_module_event(e) || is_user_label(e)) && std::regex_match(layer_name_of(e), *pattern_)) keep(e);
      });
      if (layers.empty()) fail(fmt::format("no module or record_function label matches --layers '{}'", options_.layers));
      return layers;
    }
    if (modules.empty()) {
      fail("no module events: profile an eager model with with_stack=True (which writes \"nn.Module: Block_0\" "
           "events), or give --layers naming the record_function labels around each layer");
    }
    const KinetoEvent& outermost = *modules.front();
    for (const KinetoEvent* m : modules) {
      if (m != &outermost && outermost.encloses(*m)) keep(*m);
    }
    if (layers.empty()) fail(fmt::format("the model's module {} has no child modules: give --layers", root));
    return layers;
  }

  [[nodiscard]] StepMeasure step(const Span& span, std::size_t k, std::string_view split_by) const {
    StepMeasure s;
    s.layers = layer_spans(span, s.root);
    std::set<std::string> seen;
    for (const LayerStep& l : s.layers) {
      if (!seen.insert(l.name).second) {
        // Marked steps with two forwards in one: a micro-batch loop (gradient
        // accumulation) inside each, or a module the forward calls twice.
        if (split_by == kMarkedSteps) {
          fail(fmt::format("layer {} runs twice in step {} (a ProfilerStep#N span): a micro-batch loop inside a "
                           "step, or a module the forward calls twice, is not read as layers; call prof.step() "
                           "after each micro-batch's backward, or give --layers naming labels that each run once "
                           "a step",
                           l.name, k + 1));
        }
        fail(fmt::format("layer {} runs twice in step {} and the trace cannot be split further: mark each step "
                         "(prof.step() under a profiler schedule writes ProfilerStep#N spans), or give --layers "
                         "naming labels that each run once a step",
                         l.name, k + 1));
      }
    }
    // Every ns of the step is some layer's or the step's own, so that the
    // profile's passes and steps sum to the step the trace measured.
    // Forward: each layer's span (its ops and the Python between them) and the
    // time since the previous layer's span ended (the caller's Python on its
    // way to it); the ops' sequence numbers tie the backward to the layer.
    std::map<std::int64_t, std::size_t> layer_of_sequence;
    std::int64_t forward_end = s.layers.front().span->start_ns;
    for (std::size_t i = 0; i < s.layers.size(); ++i) {
      LayerStep& l = s.layers[i];
      l.fwd_ns = l.span->duration_ns() + (i > 0 ? std::max<std::int64_t>(0, l.span->start_ns - forward_end) : 0);
      each_in(l.span->start_ns, l.span->end_ns, [&](const KinetoEvent& e) {
        if (is_op(e) && l.span->encloses(e) && e.sequence_number) layer_of_sequence[*e.sequence_number] = i;
      });
      forward_end = std::max(forward_end, l.span->end_ns);
    }
    // Backward: each top-level autograd function and the gap before it, to
    // its forward op's layer by sequence number; a parameter's AccumulateGrad,
    // and a function of no layer's op (a loss outside the model, the
    // engine's own), to the layer whose backward ran last (before any, the
    // last layer: the loss's backward runs first).
    const std::size_t last = s.layers.size() - 1;
    std::optional<std::size_t> current;
    std::int64_t backward_top_end = forward_end;
    std::optional<std::int64_t> backward_start;
    each_in(forward_end, span.end_ns, [&](const KinetoEvent& e) {
      if (!is_op(e) || !e.name.starts_with(kBackwardPrefix) || e.start_ns < backward_top_end) return;
      const std::int64_t gap = backward_start ? e.start_ns - backward_top_end : 0;
      backward_top_end = e.end_ns;
      if (!backward_start) backward_start = e.start_ns;
      std::size_t layer = current.value_or(last);
      if (e.name.find("AccumulateGrad") != std::string::npos) {
        const KinetoEvent* grad = first_op_with_inputs(e);
        const std::optional<int> bytes =
            grad == nullptr ? std::nullopt : interop::torch_element_bytes(grad->input_types.front());
        if (current && bytes) {
          LayerStep& l = s.layers[*current];
          l.param_bytes = checked_sum(l.param_bytes, tensor_bytes(grad->input_dims.front(), *bytes, trace_.origin),
                                      trace_.origin);
          l.param_dims.insert(grad->input_dims.front());
          if (l.param_type.empty()) l.param_type = grad->input_types.front();
        }
      } else if (const auto it = e.sequence_number ? layer_of_sequence.find(*e.sequence_number)
                                                    : layer_of_sequence.end();
                 it != layer_of_sequence.end()) {
        current = layer = it->second;
      } else {
        s.outside_bwd_ns += e.duration_ns();
      }
      s.layers[layer].bwd_ns += gap + e.duration_ns();
    });
    if (!backward_start) {
      fail("no backward after the forward: trace training steps (loss.backward()), with record_shapes=True");
    }
    for (LayerStep& l : s.layers) l.input_bytes = input_bytes(l);
    if (!trace_.memory.empty()) kept_bytes(s.layers, *backward_start);
    // From the last layer's end to the backward: the loss where the model
    // returns its output (its ops outside every layer), and the call into the
    // backward: the last layer's.
    s.layers[last].fwd_ns += std::max<std::int64_t>(0, *backward_start - forward_end);
    each_in(forward_end, *backward_start, [&](const KinetoEvent& e) {
      if (is_op(e) && !e.name.starts_with(kBackwardPrefix)) s.outside_fwd_ns += e.duration_ns();
    });
    // The rest is the step's own: before the first layer, and after the
    // backward (the optimizer, zero_grad, the training loop's Python).
    s.own_ns = std::max<std::int64_t>(0, s.layers.front().span->start_ns - span.start_ns) +
               std::max<std::int64_t>(0, span.end_ns - backward_top_end);
    std::int64_t optimizer_end = span.start_ns;  // one at a time: a step's optimizer spans do not nest
    each_in(span.start_ns, span.end_ns, [&](const KinetoEvent& e) {
      if (e.category != "user_annotation" || !e.name.starts_with(kOptimizerStepPrefix) || e.start_ns < optimizer_end) {
        return;
      }
      s.optimizer_ns += e.duration_ns();
      optimizer_end = e.end_ns;
    });
    return s;
  }

  // The op inside `e` (same thread) that recorded its inputs first.
  [[nodiscard]] const KinetoEvent* first_op_with_inputs(const KinetoEvent& e) const {
    const KinetoEvent* found = nullptr;
    each_in(e.start_ns, e.end_ns, [&](const KinetoEvent& op) {
      if (found == nullptr && &op != &e && is_op(op) && e.encloses(op) && !op.input_dims.empty() &&
          !op.input_dims.front().empty() && !op.input_types.empty()) {
        found = &op;
      }
    });
    return found;
  }

  // The first tensor input of the layer's ops that is none of its parameters' shapes.
  [[nodiscard]] std::int64_t input_bytes(const LayerStep& l) const {
    std::optional<std::int64_t> found;
    each_in(l.span->start_ns, l.span->end_ns, [&](const KinetoEvent& e) {
      if (found || !is_op(e) || !l.span->encloses(e)) return;
      for (std::size_t i = 0; i < e.input_dims.size() && i < e.input_types.size(); ++i) {
        const std::optional<int> bytes = interop::torch_element_bytes(e.input_types[i]);
        if (e.input_dims[i].empty() || !bytes || l.param_dims.contains(e.input_dims[i])) continue;
        found = tensor_bytes(e.input_dims[i], *bytes, trace_.origin);
        return;
      }
    });
    return found.value_or(0);
  }

  // What each layer's forward allocated and still held when the backward began.
  void kept_bytes(std::vector<LayerStep>& layers, std::int64_t backward_start) const {
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> alive;  // address -> (time, bytes)
    for (const interop::KinetoMemoryEvent& m : trace_.memory) {
      if (m.time_ns >= backward_start) break;
      if (m.bytes > 0) {
        alive[m.address] = {m.time_ns, m.bytes};
      } else {
        alive.erase(m.address);
      }
    }
    for (const auto& [address, allocation] : alive) {
      for (LayerStep& l : layers) {
        if (l.span->start_ns <= allocation.first && allocation.first <= l.span->end_ns) {
          l.kept_bytes = checked_sum(l.kept_bytes, allocation.second, trace_.origin);
          break;
        }
      }
    }
  }

  const KinetoTrace& trace_;
  const TorchTraceOptions& options_;
  std::optional<std::regex> pattern_;
};

// The median over the steps of a time in ns, in us.
template <class T, class F>
double median_us(const std::vector<T>& steps, F&& value_ns) {
  std::vector<double> ns;
  for (const T& s : steps) ns.push_back(static_cast<double>(value_ns(s)));
  return profiles::median(std::move(ns)) / 1e3;
}

// ", 5120.0 to 5600.0 us a step (9.4 % apart)": the steps' spread; "" for one step.
std::string step_spread(const std::vector<StepMeasure>& steps) {
  if (steps.size() < 2) return "";
  const auto [low, high] = std::ranges::minmax(steps, {}, &StepMeasure::duration_ns);
  const double lo = static_cast<double>(low.duration_ns) / 1e3;
  const double hi = static_cast<double>(high.duration_ns) / 1e3;
  return fmt::format(", {:.1f} to {:.1f} us a step ({:.1f} % apart)", lo, hi, lo > 0 ? 100 * (hi - lo) / lo : 0.0);
}

std::string dtype_of(const std::string& type) {
  if (type == "c10::BFloat16") return "bf16";
  if (type == "c10::Half") return "fp16";
  return "fp32";
}

}  // namespace

profiles::Profile torch_trace_profile(const std::vector<TorchTrace>& traces, const TorchTraceOptions& options) {
  if (traces.empty()) throw InputError("--from-torch-trace: no trace given");
  profiles::Profile profile;
  profile.source = "torch-trace";
  std::vector<std::string> sources;
  std::set<int> sizes;
  std::string root;
  bool memory_missing = false;
  std::string last_output_layer;
  std::vector<std::int64_t> optimizer_ns, own_ns;  // every step's, over the traces
  double outside_fwd_us = 0;
  double outside_bwd_us = 0;
  for (const TorchTrace& t : traces) {
    const KinetoTrace& trace = t.trace;
    const int b = t.micro_batch_size;
    if (b < 1) throw InputError(fmt::format("{}: micro-batch size {} must be at least 1", trace.origin, b));
    if (!sizes.insert(b).second) {
      throw InputError(fmt::format("{}: micro-batch size {} is given twice: one trace a size", trace.origin, b));
    }
    if (!trace.device_names.empty()) {
      throw InputError(fmt::format("{}: a GPU trace ({}): gpipe reads CPU traces so far (a GPU's kernel spans wait "
                                   "for a GPU trace to be tested against)",
                                   trace.origin, trace.device_names.front()));
    }
    if (!trace.record_shapes) {
      throw InputError(fmt::format("{}: recorded without shapes: profile with record_shapes=True (the layers' bytes "
                                   "and parameters come from them)",
                                   trace.origin));
    }
    if (trace.memory.empty()) {
      if (!options.no_activation_bytes) {
        throw InputError(fmt::format("{}: no memory events, so activation bytes cannot be measured: profile with "
                                     "profile_memory=True, or give --no-activation-bytes to write each layer's input "
                                     "bytes instead",
                                     trace.origin));
      }
      memory_missing = true;
    }
    std::string split_by;
    std::vector<StepMeasure> steps = TraceReader(trace, options).steps(split_by);
    if (steps.empty()) throw InputError(fmt::format("{}: no events", trace.origin));
    const std::string spread = step_spread(steps);
    const std::size_t found = steps.size();
    if (options.step) {
      if (*options.step < 1 || static_cast<std::size_t>(*options.step) > found) {
        throw InputError(fmt::format("{}: --step {}: the trace has {} step{} (split by {}); give 1 to {}",
                                     trace.origin, *options.step, found, found == 1 ? "" : "s", split_by, found));
      }
      steps = {steps[static_cast<std::size_t>(*options.step - 1)]};
    }
    const StepMeasure& first = steps.front();
    for (const StepMeasure& s : steps) {
      std::vector<std::string> a, n;
      for (const LayerStep& l : s.layers) a.push_back(l.name);
      for (const LayerStep& l : first.layers) n.push_back(l.name);
      if (a != n) {
        throw InputError(fmt::format("{}: the steps run different layers ({} against {})", trace.origin,
                                     fmt::join(a, ", "), fmt::join(n, ", ")));
      }
    }
    if (profile.layers.empty()) {
      root = first.root;
      profile.device = fmt::format("CPU ({})", trace.host_name.empty() ? "host unnamed" : trace.host_name);
      profile.dtype = dtype_of(first.layers.front().param_type);
      for (const LayerStep& l : first.layers) {
        profile.layers.push_back(
            {.name = l.name, .kind = kind_of(l.name, l.module), .param_bytes = l.param_bytes, .samples = {}});
      }
    } else {
      std::vector<std::string> mine, theirs;
      for (const LayerStep& l : first.layers) mine.push_back(l.name);
      for (const profiles::LayerProfile& l : profile.layers) theirs.push_back(l.name);
      if (mine != theirs) {
        throw InputError(fmt::format("{}: its layers ({}) are not the first trace's ({})", trace.origin,
                                     fmt::join(mine, ", "), fmt::join(theirs, ", ")));
      }
    }
    const std::size_t n = first.layers.size();
    double passes_us = 0;  // the layers' forwards and backwards, as the profile has them
    for (std::size_t i = 0; i < n; ++i) {
      const LayerStep& l = first.layers[i];
      if (l.param_bytes != profile.layers[i].param_bytes) {
        throw InputError(fmt::format("{}: layer {} has {} parameter bytes, {} in the first trace", trace.origin,
                                     l.name, l.param_bytes, profile.layers[i].param_bytes));
      }
      profiles::ProfileSample sample;
      sample.micro_batch_size = b;
      sample.fwd_us = median_us(steps, [i](const StepMeasure& s) { return s.layers[i].fwd_ns; });
      sample.bwd_us = median_us(steps, [i](const StepMeasure& s) { return s.layers[i].bwd_ns; });
      sample.input_bytes = l.input_bytes;
      sample.output_bytes = i + 1 < n ? first.layers[i + 1].input_bytes : 0;
      sample.activation_bytes =
          memory_missing ? l.input_bytes
                         : std::max(l.input_bytes, l.kept_bytes - sample.output_bytes + l.input_bytes);
      profile.layers[i].samples.push_back(sample);
      passes_us += sample.fwd_us + sample.bwd_us;
    }
    last_output_layer = first.layers.back().name;
    for (const StepMeasure& s : steps) {
      optimizer_ns.push_back(s.optimizer_ns);
      own_ns.push_back(s.own_ns);
    }
    outside_fwd_us = std::max(outside_fwd_us, median_us(steps, [](const StepMeasure& s) { return s.outside_fwd_ns; }));
    outside_bwd_us = std::max(outside_bwd_us, median_us(steps, [](const StepMeasure& s) { return s.outside_bwd_ns; }));
    // What the profile holds of a step (its passes and the step's own time)
    // against the step the trace measured: equal for one step, near for the
    // median of several, as near as the steps' noise lets the medians be.
    const double held_us = passes_us + median_us(steps, [](const StepMeasure& s) { return s.own_ns; });
    const double step_us = median_us(steps, [](const StepMeasure& s) { return s.duration_ns; });
    sources.push_back(fmt::format("{} (b={}, {} step{} by {}{}; {}; the profile holds {:.1f} us of the {:.1f} us "
                                  "step, {:+.1f} %)",
                                  trace.origin, b, found, found == 1 ? "" : "s", split_by, spread,
                                  options.step ? fmt::format("step {} taken", *options.step)
                                  : found == 1 ? std::string("its times")
                                               : std::string("each time the median of the steps"),
                                  held_us, step_us, step_us > 0 ? 100 * (held_us / step_us - 1) : 0.0));
  }
  for (profiles::LayerProfile& l : profile.layers) {
    std::ranges::sort(l.samples, {}, &profiles::ProfileSample::micro_batch_size);
  }
  const double optimizer_us = median_us(optimizer_ns, [](std::int64_t ns) { return ns; });
  const double own_us = median_us(own_ns, [](std::int64_t ns) { return ns; });
  std::int64_t params = 0;
  for (const profiles::LayerProfile& l : profile.layers) params += l.param_bytes;
  for (profiles::LayerProfile& l : profile.layers) {
    l.optimizer_us = params > 0 ? own_us * static_cast<double>(l.param_bytes) / static_cast<double>(params) : 0;
  }

  profile.model = options.model.empty() ? "torch:" + (root.empty() ? std::string("record_function layers") : root)
                                        : options.model;
  profile.link = profiles::Link{.latency_us = 0, .bandwidth_GBps = 1e6};
  profile.measured_from = fmt::format("PyTorch {} profiler traces of CPU ops: {}",
                                      options.torch_version.empty() ? "(version unknown)" : options.torch_version,
                                      fmt::join(sources, ", "));
  profile.not_measured = {
      "link: a one-device trace has no transfers (0 us, 1000000 GB/s here; give gpipe-sim run --link-latency-us "
      "and --link-bandwidth-gbps)",
      fmt::format("optimizer_us: the step outside its forward and backward is measured whole ({:.1f} us a step: the "
                  "optimizer's {:.1f} us, and zero_grad and the training loop's Python) and shared among the layers "
                  "by parameter bytes",
                  own_us, optimizer_us),
      fmt::format("output_bytes of the last layer ({}): a trace records inputs only (0)", last_output_layer),
      "bwd_input_us and bwd_weight_us: a torch backward is not split into input and weight gradients"};
  if (memory_missing) {
    profile.not_measured.push_back("activation_bytes: no memory events (each layer's input bytes instead)");
  }
  if (outside_fwd_us > 0 || outside_bwd_us > 0) {
    profile.not_measured.push_back(fmt::format(
        "time in no layer's ops: forward ops up to {:.1f} us a step after the last layer (a loss outside the model) "
        "are the last layer's forward, and autograd functions up to {:.1f} us of no layer's ops the backward of the "
        "layer that ran before them",
        outside_fwd_us, outside_bwd_us));
  }
  return profile;
}

}  // namespace gpipe::interop
