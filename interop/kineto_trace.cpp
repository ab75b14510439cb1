#include "interop/kineto_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"

namespace gpipe::interop {

namespace {

using nlohmann::json;

// Times beyond this (about 31 years in us) cannot come from a run.
constexpr double kMaxAbsUs = 1e15;
constexpr std::uint64_t kMaxBaseTimeNs = std::uint64_t{1} << 61;
constexpr std::int64_t kMaxEventBytes = std::int64_t{1} << 50;  // a profile's own bound on bytes
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

class EventReader {
 public:
  EventReader(std::string_view origin, std::size_t index) : origin_(origin), index_(index) {}

  [[noreturn]] void fail(std::string_view key, std::string_view why) const {
    throw InputError(fmt::format("{}: traceEvents[{}]: '{}' {}", origin_, index_, key, why));
  }
  [[nodiscard]] std::int64_t time_ns(const json& ev, const char* key, bool non_negative) const {
    const auto it = ev.find(key);
    if (it == ev.end() || !it->is_number()) fail(key, "must be a number");
    const double us = it->get<double>();
    if (!std::isfinite(us) || std::abs(us) > kMaxAbsUs || (non_negative && us < 0)) {
      fail(key, non_negative ? "must be a non-negative number of microseconds" : "is out of range");
    }
    return std::llround(us * 1000.0);
  }
  [[nodiscard]] std::string text(const json& ev, const char* key) const {
    const auto it = ev.find(key);
    if (it == ev.end() || it->is_null()) return {};
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
    fail(key, "must be a string or an integer");
  }
  [[nodiscard]] std::optional<std::int64_t> integer_arg(const json& args, const char* key) const {
    const auto it = args.find(key);
    if (it == args.end()) return std::nullopt;
    if (!it->is_number_integer()) fail(fmt::format("args.{}", key), "must be an integer");
    return it->get<std::int64_t>();
  }

 private:
  std::string_view origin_;
  std::size_t index_;
};

// A record_shapes list of dims per input: [[2, 16, 32], [], [32]].
std::vector<std::vector<std::int64_t>> read_dims(const json& value, const EventReader& in) {
  std::vector<std::vector<std::int64_t>> out;
  if (!value.is_array()) in.fail("args.Input Dims", "must be an array");
  for (const json& input : value) {
    std::vector<std::int64_t>& dims = out.emplace_back();
    // A scalar, or a TensorList's list of shapes: not one tensor.
    if (!input.is_array() || std::ranges::any_of(input, [](const json& d) { return d.is_array(); })) continue;
    for (const json& d : input) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxDim) {
        in.fail("args.Input Dims", "must hold non-negative integers or lists of them");
      }
      dims.push_back(d.get<std::int64_t>());
    }
  }
  return out;
}

KinetoEvent read_complete(const json& ev, const EventReader& in) {
  KinetoEvent e;
  const auto name = ev.find("name");
  if (name == ev.end() || !name->is_string()) in.fail("name", "must be a string");
  e.name = name->get<std::string>();
  e.category = in.text(ev, "cat");
  e.process = in.text(ev, "pid");
  e.thread = in.text(ev, "tid");
  e.start_ns = in.time_ns(ev, "ts", false);
  e.end_ns = e.start_ns + in.time_ns(ev, "dur", true);
  const auto args = ev.find("args");
  if (args == ev.end()) return e;
  if (!args->is_object()) in.fail("args", "must be an object");
  e.sequence_number = in.integer_arg(*args, "Sequence number");
  e.external_id = in.integer_arg(*args, "External id");
  if (const auto dims = args->find("Input Dims"); dims != args->end()) e.input_dims = read_dims(*dims, in);
  if (const auto types = args->find("Input type"); types != args->end()) {
    if (!types->is_array()) in.fail("args.Input type", "must be an array");
    for (const json& t : *types) e.input_types.push_back(t.is_string() ? t.get<std::string>() : std::string());
  }
  return e;
}

KinetoMemoryEvent read_memory(const json& ev, const EventReader& in) {
  KinetoMemoryEvent m;
  m.time_ns = in.time_ns(ev, "ts", false);
  const auto args = ev.find("args");
  if (args == ev.end() || !args->is_object()) in.fail("args", "must be an object");
  const auto required = [&](const char* key) {
    const auto v = in.integer_arg(*args, key);
    if (!v) in.fail(fmt::format("args.{}", key), "is missing");
    return *v;
  };
  m.address = required("Addr");
  m.bytes = required("Bytes");
  if (std::abs(m.bytes) > kMaxEventBytes) in.fail("args.Bytes", "must be within 2^50 bytes");
  m.total_allocated = required("Total Allocated");
  return m;
}

bool flag(const json& document, const char* key) {
  const auto it = document.find(key);
  return it != document.end() && ((it->is_number_integer() && it->get<std::int64_t>() != 0) ||
                                   (it->is_boolean() && it->get<bool>()));
}

}  // namespace

std::optional<int> torch_element_bytes(std::string_view type) {
  static constexpr std::pair<std::string_view, int> kTypes[] = {
      {"float", 4},         {"double", 8},        {"c10::Half", 2},      {"c10::BFloat16", 2},
      {"int", 4},           {"long int", 8},      {"short int", 2},      {"signed char", 1},
      {"unsigned char", 1}, {"bool", 1},          {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1},
      {"c10::complex<float>", 8}, {"c10::complex<double>", 16}};
  for (const auto& [name, bytes] : kTypes) {
    if (name == type) return bytes;
  }
  return std::nullopt;
}

KinetoTrace kineto_trace_from_json(const json& document, std::string_view origin) {
  if (!document.is_object()) {
    throw InputError(fmt::format("{}: not a PyTorch profiler trace: expected a JSON object", origin));
  }
  const auto events = document.find("traceEvents");
  if (events == document.end() || !events->is_array()) {
    throw InputError(fmt::format("{}: not a PyTorch profiler trace: no 'traceEvents' array", origin));
  }
  KinetoTrace trace;
  trace.origin = std::string(origin);
  trace.record_shapes = flag(document, "record_shapes");
  trace.profile_memory = flag(document, "profile_memory");
  trace.with_stack = flag(document, "with_stack");
  if (const auto host = document.find("host_name"); host != document.end() && host->is_string()) {
    trace.host_name = host->get<std::string>();
  }
  if (const auto base = document.find("baseTimeNanoseconds"); base != document.end() && base->is_number_integer()) {
    trace.base_time_ns = base->get<std::int64_t>();
    // An epoch time: past 2^61 ns (the year 2043) it is no clock's, and the
    // sums and differences of clocks (torch_pipeline_timeline.cpp) stay in 64 bits below it.
    if (base->is_number_unsigned() ? base->get<std::uint64_t>() > kMaxBaseTimeNs
                                   : trace.base_time_ns < 0 || trace.base_time_ns > static_cast<std::int64_t>(kMaxBaseTimeNs)) {
      throw InputError(fmt::format("{}: 'baseTimeNanoseconds' must be from 0 to 2^61 ns", origin));
    }
  }
  if (const auto devices = document.find("deviceProperties"); devices != document.end() && devices->is_array()) {
    for (const json& d : *devices) {
      if (d.is_object() && d.contains("name") && d["name"].is_string()) trace.device_names.push_back(d["name"]);
    }
  }
  if (const auto info = document.find("distributedInfo"); info != document.end() && info->is_object()) {
    const auto number = [&](const char* key) -> std::optional<int> {
      const auto it = info->find(key);
      if (it == info->end()) return std::nullopt;
      if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > (1 << 24)) {
        throw InputError(fmt::format("{}: 'distributedInfo.{}' must be a non-negative integer", origin, key));
      }
      return static_cast<int>(it->get<std::int64_t>());
    };
    trace.rank = number("rank");
    trace.world_size = number("world_size");
  }
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& ev = (*events)[i];
    const EventReader in(origin, i);
    if (!ev.is_object()) {
      throw InputError(fmt::format("{}: traceEvents[{}] must be an object", origin, i));
    }
    const auto ph = ev.find("ph");
    if (ph == ev.end() || !ph->is_string()) in.fail("ph", "must be a string");
    if (*ph == "X") {
      trace.events.push_back(read_complete(ev, in));
    } else if (const auto name = ev.find("name");
               *ph == "i" && name != ev.end() && name->is_string() && *name == "[memory]") {
      trace.memory.push_back(read_memory(ev, in));
    }
  }
  std::ranges::stable_sort(trace.events, [](const KinetoEvent& a, const KinetoEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::ranges::stable_sort(trace.memory, {}, &KinetoMemoryEvent::time_ns);
  return trace;
}

KinetoTrace read_kineto_trace(const std::filesystem::path& path) {
  return kineto_trace_from_json(read_json_file(path), path.string());
}

}  // namespace gpipe::interop
