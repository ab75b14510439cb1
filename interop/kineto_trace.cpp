#include "interop/kineto_trace.hpp"
#include "interop/gzip_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"

namespace gpipe::interop {

namespace {

using nlohmann::json;

// Times beyond this (about 31 years in us) cannot come from a run.
constexpr double kMaxAbsUs = 1e15;
constexpr std::int64_t kMaxBaseTimeNs = std::int64_t{1} << 61;
constexpr std::int64_t kMaxEventBytes = std::int64_t{1} << 50;  // a profile's own bound on bytes
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

// A PyTorch trace's errors: "ORIGIN: 'distributedInfo.rank' must be ...", and
// within an event "ORIGIN: traceEvents[3]: 'args.Bytes' is missing".
constexpr JsonWording kKinetoWording{.form = JsonWording::Form::quoted};

// The member `key` of an event, which must be there: absent, it fails as a
// value of the wrong kind would (`what`: "must be a number").
JsonField present(const JsonField& ev, std::string_view key, std::string_view what) {
  const auto field = ev.optional_member(key);
  if (!field) ev.fail_member(key, what);
  return *field;
}

std::int64_t time_ns(const JsonField& ev, std::string_view key, bool non_negative) {
  const JsonField at = present(ev, key, "must be a number");
  const double us = at.number();
  if (!std::isfinite(us) || std::abs(us) > kMaxAbsUs || (non_negative && us < 0)) {
    at.fail(non_negative ? "must be a non-negative number of microseconds" : "is out of range");
  }
  return std::llround(us * 1000.0);
}

// A string, or an integer as its text; empty when absent or null.
std::string text(const JsonField& ev, std::string_view key) {
  const auto at = ev.optional_member(key);
  if (!at || at->value().is_null()) return {};
  if (at->value().is_number_integer()) return std::to_string(at->value().get<std::int64_t>());
  if (!at->value().is_string()) at->fail("must be a string or an integer");
  return at->string();
}

std::optional<std::int64_t> integer_arg(const JsonField& args, std::string_view key) {
  const auto at = args.optional_member(key);
  if (!at) return std::nullopt;
  return at->integer();
}

// A record_shapes list of dims per input: [[2, 16, 32], [], [32]].
std::vector<std::vector<std::int64_t>> read_dims(const JsonField& at) {
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(at.array_size());
  for (const json& input : at.value()) {
    std::vector<std::int64_t>& dims = out.emplace_back();
    // A scalar, or a TensorList's list of shapes: not one tensor.
    if (!input.is_array() || std::ranges::any_of(input, [](const json& d) { return d.is_array(); })) continue;
    for (const json& d : input) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxDim) {
        at.fail("must hold non-negative integers or lists of them");
      }
      dims.push_back(d.get<std::int64_t>());
    }
  }
  return out;
}

KinetoEvent read_complete(const JsonField& ev) {
  KinetoEvent e;
  e.name = present(ev, "name", "must be a string").string();
  e.category = text(ev, "cat");
  e.process = text(ev, "pid");
  e.thread = text(ev, "tid");
  e.start_ns = time_ns(ev, "ts", false);
  e.end_ns = e.start_ns + time_ns(ev, "dur", true);
  const auto args = ev.optional_member("args");
  if (!args) return e;
  args->expect_object();
  e.sequence_number = integer_arg(*args, "Sequence number");
  e.external_id = integer_arg(*args, "External id");
  if (const auto dims = args->optional_member("Input Dims")) e.input_dims = read_dims(*dims);
  if (const auto types = args->optional_member("Input type")) {
    e.input_types.reserve(types->array_size());
    for (const json& t : types->value()) e.input_types.push_back(t.is_string() ? t.get<std::string>() : std::string());
  }
  return e;
}

KinetoMemoryEvent read_memory(const JsonField& ev) {
  KinetoMemoryEvent m;
  m.time_ns = time_ns(ev, "ts", false);
  const JsonField args = present(ev, "args", "must be an object");
  m.address = args.member("Addr").integer();
  const JsonField bytes = args.member("Bytes");
  m.bytes = bytes.integer();
  if (std::abs(m.bytes) > kMaxEventBytes) bytes.fail("must be within 2^50 bytes");
  m.total_allocated = args.member("Total Allocated").integer();
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
  const JsonField root(document, origin, kKinetoWording);
  if (!document.is_object()) root.fail("not a PyTorch profiler trace: expected a JSON object");
  const auto events = root.optional_member("traceEvents");
  if (!events || !events->value().is_array()) root.fail("not a PyTorch profiler trace: no 'traceEvents' array");
  KinetoTrace trace;
  trace.origin = std::string(origin);
  trace.record_shapes = flag(document, "record_shapes");
  trace.profile_memory = flag(document, "profile_memory");
  trace.with_stack = flag(document, "with_stack");
  if (const auto host = document.find("host_name"); host != document.end() && host->is_string()) {
    trace.host_name = host->get<std::string>();
  }
  if (const auto base = root.optional_member("baseTimeNanoseconds"); base && base->value().is_number_integer()) {
    // An epoch time: past 2^61 ns (the year 2043) it is no clock's, and the
    // sums and differences of clocks (torch_pipeline_timeline.cpp) stay in 64 bits below it.
    trace.base_time_ns = base->integer(0, kMaxBaseTimeNs, "from 0 to 2^61 ns");
  }
  if (const auto devices = document.find("deviceProperties"); devices != document.end() && devices->is_array()) {
    for (const json& d : *devices) {
      if (d.is_object() && d.contains("name") && d["name"].is_string()) trace.device_names.push_back(d["name"]);
    }
  }
  if (const auto info = root.optional_member("distributedInfo"); info && info->value().is_object()) {
    const auto number = [&](std::string_view key) -> std::optional<int> {
      const auto at = info->optional_member(key);
      if (!at) return std::nullopt;
      return static_cast<int>(at->integer(0, 1 << 24, "a non-negative integer"));
    };
    trace.rank = number("rank");
    trace.world_size = number("world_size");
  }
  const std::size_t count = events->array_size();
  for (std::size_t i = 0; i < count; ++i) {
    const JsonField ev = events->element(i).record();
    ev.expect_object();
    const std::string& ph = present(ev, "ph", "must be a string").string();
    if (ph == "X") {
      trace.events.push_back(read_complete(ev));
    } else if (const auto name = ev.optional_member("name"); ph == "i" && name && name->value() == "[memory]") {
      trace.memory.push_back(read_memory(ev));
    }
  }
  std::ranges::stable_sort(trace.events, [](const KinetoEvent& a, const KinetoEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::ranges::stable_sort(trace.memory, {}, &KinetoMemoryEvent::time_ns);
  return trace;
}

KinetoTrace read_kineto_trace(const std::filesystem::path& path) {
  return kineto_trace_from_json(parse_json_text(read_maybe_gzipped_text(path), path.string()), path.string());
}

}  // namespace gpipe::interop
