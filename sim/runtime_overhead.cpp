#include "sim/runtime_overhead.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {
namespace {

constexpr JsonWording kWording{};

ActionOverheads kinds_of(const JsonField& field, const std::string& origin, std::string_view name) {
  field.expect_object();
  ActionOverheads out;
  for (const auto& [key, value] : field.value().items()) {
    const auto kind = schedules::parse_action_kind(key);
    if (!kind || timelines::stream_of(*kind) != timelines::Stream::compute) {
      throw InputError(fmt::format("{}: {}: '{}' is not a kind of action on the compute stream (F, B, I, W, "
                                   "WAIT_SEND_F, UNSHARD, ...; the transfers are transfer_us)",
                                   origin, name, key));
    }
    const double us = field.member(key).non_negative_number();
    if (us > 1e9) throw InputError(fmt::format("{}: {}.{}: more than 1e9 us", origin, name, key));
    out.emplace(*kind, std::llround(us * 1000));
  }
  return out;
}

}  // namespace

RuntimeOverhead read_runtime_overhead(const std::filesystem::path& path) {
  const std::string origin = path.string();
  const nlohmann::json doc = read_json_file(path);
  const JsonField root(doc, origin, kWording);
  root.expect_object();
  if (root.member("format").string() != kRuntimeOverheadFormat) {
    throw InputError(fmt::format("{}: format: expected \"{}\" (a file of scripts/fit-torch-overhead)", origin,
                                 kRuntimeOverheadFormat));
  }
  RuntimeOverhead o;
  o.runtime = root.member("runtime").non_empty_string();
  o.version = root.member("version").non_empty_string();
  o.backend = root.member("backend").non_empty_string();
  o.device = root.member("device").non_empty_string();
  o.measured_by = root.member("measured_by").non_empty_string();
  const JsonField traces = root.member("fitted_on");
  for (std::size_t i = 0, n = traces.non_empty_array_size(); i < n; ++i) {
    o.fitted_on.push_back(traces.element(i).non_empty_string());
  }
  o.per_action = kinds_of(root.member("per_action_us"), origin, "per_action_us");
  o.per_layer = kinds_of(root.member("per_layer_us"), origin, "per_layer_us");
  o.transfer_us = root.member("transfer_us").non_negative_number();
  if (o.transfer_us > 1e9) throw InputError(fmt::format("{}: transfer_us: more than 1e9 us", origin));
  return o;
}

std::string describe(const RuntimeOverhead& overhead) {
  std::string text = fmt::format("{} {} ({}) on {}: ", overhead.runtime, overhead.version, overhead.backend,
                                 overhead.device);
  if (!overhead.per_action.empty()) text += to_string(overhead.per_action) + " an action; ";
  if (!overhead.per_layer.empty()) text += to_string(overhead.per_layer) + " a layer; ";
  return text + fmt::format("transfers {:g} us", overhead.transfer_us);
}

}  // namespace gpipe::sim
