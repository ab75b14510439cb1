// A PyTorch profiler trace (Kineto's Chrome JSON, written by
// torch.profiler.profile(...).export_chrome_trace(path)) as the events
// gpipe's torch importers read: its complete ("X") events with the
// arguments they use, and its memory events. Times are integer ns from the
// trace's microseconds (Kineto writes three decimals: ns exactly).
//
// What the importers read from the arguments (PyTorch 2.x):
// - "Sequence number": a forward op's autograd node; the backward's
//   "autograd::engine::evaluate_function: XBackward0" event carries the same;
// - "Input Dims" and "Input type" (record_shapes=True): each input's shape and
//   element type ("float", "int", "long int", "c10::BFloat16", ...; "" or
//   "Scalar" for what is not a tensor);
// - "External id": what ties a CPU op to its GPU kernels.
// Memory events ("[memory]", profile_memory=True): "Addr", "Bytes" (positive
// for an allocation, negative for a free) and "Total Allocated".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpipe::interop {

// The label torch.profiler puts around each step it is told of (prof.step()):
// "ProfilerStep#N", a user_annotation.
inline constexpr std::string_view kProfilerStepPrefix = "ProfilerStep#";
// What PyTorch writes around each module's forward of an eager model profiled
// with with_stack=True ("nn.Module: Block_0", a python_function), and around
// each optimizer step ("Optimizer.step#AdamW.step", a user_annotation).
inline constexpr std::string_view kModulePrefix = "nn.Module: ";
inline constexpr std::string_view kOptimizerStepPrefix = "Optimizer.step#";
// What the autograd engine puts around each function of a backward
// ("autograd::engine::evaluate_function: AddmmBackward0", a cpu_op).
inline constexpr std::string_view kBackwardPrefix = "autograd::engine::evaluate_function: ";

struct KinetoEvent {
  std::string name;
  std::string category;  // "cpu_op", "python_function", "user_annotation", "kernel", ...
  std::string process;   // pid and tid as the trace writes them (numbers or names), as text
  std::string thread;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::optional<std::int64_t> sequence_number;
  std::optional<std::int64_t> external_id;
  std::vector<std::vector<std::int64_t>> input_dims;  // per input; empty for a non-tensor
  std::vector<std::string> input_types;               // per input

  [[nodiscard]] std::int64_t duration_ns() const { return end_ns - start_ns; }
  // Whether `other` lies within this event, on the same thread.
  [[nodiscard]] bool encloses(const KinetoEvent& other) const {
    return process == other.process && thread == other.thread && start_ns <= other.start_ns &&
           other.end_ns <= end_ns;
  }
};

// A module's forward span.
[[nodiscard]] inline bool is_module_event(const KinetoEvent& e) {
  return e.category == "python_function" && e.name.starts_with(kModulePrefix);
}
// A user's record_function label (not the profiler's steps, nor the optimizer's).
[[nodiscard]] inline bool is_user_label(const KinetoEvent& e) {
  return e.category == "user_annotation" && !e.name.starts_with(kProfilerStepPrefix) &&
         !e.name.starts_with("Optimizer.");
}
// A module's name ("Block_0") or a label's text: what --layers matches.
[[nodiscard]] inline std::string layer_name_of(const KinetoEvent& e) {
  return is_module_event(e) ? e.name.substr(kModulePrefix.size()) : e.name;
}

struct KinetoMemoryEvent {
  std::int64_t time_ns = 0;
  std::int64_t address = 0;
  std::int64_t bytes = 0;  // < 0: a free
  std::int64_t total_allocated = 0;
};

struct KinetoTrace {
  std::string origin;  // the file, for messages
  // Sorted by start, a longer event first on a tie (an enclosing one before
  // what it encloses).
  std::vector<KinetoEvent> events;
  std::vector<KinetoMemoryEvent> memory;  // in time order
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
  std::string host_name;
  std::vector<std::string> device_names;  // "deviceProperties": a GPU trace's devices
  std::int64_t base_time_ns = 0;          // "baseTimeNanoseconds": the clock the ts count from
  // "distributedInfo" of a rank of a torch.distributed run; nullopt without.
  std::optional<int> rank;
  std::optional<int> world_size;
};

// Throws InputError naming the origin and the field ("t.json: traceEvents[12]:
// 'dur' must be a non-negative number of microseconds") when the document is
// not such a trace, or holds numbers past what any run gives (a base time past
// 2^61 ns, a dimension past 2^40, an allocation past 2^50 bytes).
[[nodiscard]] KinetoTrace kineto_trace_from_json(const nlohmann::json& document, std::string_view origin);
[[nodiscard]] KinetoTrace read_kineto_trace(const std::filesystem::path& path);

// The bytes of one element of a torch type as the trace names it ("float" 4,
// "c10::BFloat16" 2, "long int" 8, ...); nullopt for what is not a tensor type.
[[nodiscard]] std::optional<int> torch_element_bytes(std::string_view type);

}  // namespace gpipe::interop
