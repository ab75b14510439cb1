#include "profiles/device.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/text.hpp"

namespace gpipe::profiles {

extern const std::string_view kShippedDevices;  // devices.json, built in (shipped_devices.cpp.in)

namespace {

using nlohmann::json;

// One row of a table; `where` is "ORIGIN: device N" for errors.
class RowReader {
 public:
  RowReader(const json& row, std::string where) : row_(row), where_(std::move(where)) {}

  std::string text(const char* field) const {
    const json& v = at(field);
    if (!v.is_string() || v.get<std::string>().empty()) throw error(field, "must be a non-empty string");
    return v.get<std::string>();
  }
  // A positive number; `nullable`: or null, for none.
  std::optional<double> number(const char* field, bool nullable = false) const {
    const json& v = at(field);
    if (nullable && v.is_null()) return std::nullopt;
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1e9) {
      throw error(field, nullable ? "must be a positive number, or null for none" : "must be a positive number");
    }
    return v.get<double>();
  }
  // As number(), but nullopt where the row has no such field at all.
  std::optional<double> optional_number(const char* field) const {
    if (!row_.contains(field)) return std::nullopt;
    return number(field);
  }
  void name_it(const std::string& key) { where_ += fmt::format(" (\"{}\")", key); }

 private:
  const json& at(const char* field) const {
    const auto it = row_.find(field);
    if (it == row_.end()) throw InputError(fmt::format("{}: missing field '{}'", where_, field));
    return *it;
  }
  InputError error(const char* field, const char* what) const {
    return InputError(fmt::format("{}: field '{}' {}", where_, field, what));
  }

  const json& row_;
  std::string where_;
};

Device parse_row(const json& row, const std::string& where) {
  if (!row.is_object()) throw InputError(fmt::format("{}: must be an object", where));
  RowReader r(row, where);
  Device d;
  d.key = r.text("key");
  r.name_it(d.key);
  d.name = r.text("name");
  d.bf16_tflops = *r.number("bf16_tflops");
  d.fp8_tflops = r.number("fp8_tflops", /*nullable=*/true);
  d.fp32_tflops = r.number("fp32_tflops", /*nullable=*/true);
  d.memory_bytes = static_cast<std::int64_t>(*r.number("memory_GB") * 1e9);
  // What the driver reports, where known, is what a process can allocate:
  // "80 GB" on an H100's datasheet is 81,559 MiB (85.5e9 bytes) in nvidia-smi.
  if (const auto mib = r.optional_number("memory_MiB")) {
    d.memory_bytes = static_cast<std::int64_t>(*mib) * (std::int64_t{1} << 20);
  }
  d.hbm_TBps = *r.number("memory_TBps");
  d.link_GBps = *r.number("link_GBps");
  d.source = r.text("source");
  return d;
}

}  // namespace

std::vector<Device> parse_devices(std::string_view text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: not JSON: {}", origin, e.what()));
  }
  if (!doc.is_object() || !doc.contains("devices") || !doc["devices"].is_array() || doc["devices"].empty()) {
    throw InputError(fmt::format("{}: expected {{\"devices\": [...]}} with at least one device", origin));
  }
  std::vector<Device> table;
  for (std::size_t i = 0; i < doc["devices"].size(); ++i) {
    Device d = parse_row(doc["devices"][i], fmt::format("{}: device {}", origin, i + 1));
    if (find_device(d.key, table) || find_device(d.name, table)) {
      throw InputError(fmt::format("{}: device {} (\"{}\"): its key or name is another device's", origin, i + 1,
                                   d.key));
    }
    table.push_back(std::move(d));
  }
  return table;
}

std::vector<Device> load_device_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("--device-file {}: cannot read it", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_devices(text.str(), "--device-file " + path.string());
}

std::span<const Device> known_devices() {
  static const std::vector<Device> table = parse_devices(kShippedDevices, "profiles/devices.json");
  return table;
}

std::optional<Device> find_device(std::string_view key_or_name, std::span<const Device> table) {
  for (const Device& device : table) {
    if (equal_ignoring_case(device.key, key_or_name) || equal_ignoring_case(device.name, key_or_name)) {
      return device;
    }
  }
  return std::nullopt;
}

Device device_named(std::string_view key_or_name, std::span<const Device> table) {
  if (auto device = find_device(key_or_name, table)) return *device;
  throw InputError(fmt::format("unknown device '{}' (known: {})", key_or_name, device_keys(table)));
}

std::string device_keys(std::span<const Device> table) {
  std::vector<std::string_view> keys;
  keys.reserve(table.size());
  for (const Device& d : table) keys.push_back(d.key);
  return fmt::format("{}", fmt::join(keys, ", "));
}

double peak_flops(const Device& device, models::DType dtype) {
  if (dtype == models::DType::bf16) return device.bf16_tflops * 1e12;
  if (dtype == models::DType::fp8) {
    if (!device.fp8_tflops) {
      throw InputError(fmt::format("--dtype fp8: {} has no fp8 tensor cores in the device table", device.key));
    }
    return *device.fp8_tflops * 1e12;
  }
  if (!device.fp32_tflops) {
    throw InputError(fmt::format("--dtype fp32: the device table gives {} no fp32 rate", device.key));
  }
  return *device.fp32_tflops * 1e12;
}

double hbm_bytes_per_s(const Device& device) { return device.hbm_TBps * 1e12; }

}  // namespace gpipe::profiles
