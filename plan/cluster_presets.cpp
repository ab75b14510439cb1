#include "plan/cluster_presets.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/text.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"

namespace gpipe::plan {

extern const std::string_view kShippedClusters;  // clusters.json, built in (shipped_clusters.cpp.in)

namespace {

constexpr JsonWording kWording{};

ClusterPreset parse_row(const JsonField& row) {
  row.expect_object();
  ClusterPreset c;
  c.key = row.member("key").non_empty_string();
  c.name = row.member("name").non_empty_string();
  c.device = row.member("device").non_empty_string();
  c.gpus_per_node = static_cast<int>(row.member("gpus_per_node").integer(1, 1 << 16, "an integer from 1 to 65536"));
  c.inter_node.bandwidth_GBps = row.member("inter_node_GBps").positive_number();
  c.inter_node.latency_us = row.member("inter_node_latency_us").non_negative_number();
  c.source = row.member("source").non_empty_string();
  return c;
}

}  // namespace

std::vector<ClusterPreset> parse_clusters(std::string_view text, std::string_view origin) {
  const nlohmann::json doc = parse_json_text(text, origin);
  const JsonField root(doc, origin, kWording);
  root.expect_object();
  const JsonField rows = root.member("clusters");
  std::vector<ClusterPreset> table;
  for (std::size_t i = 0; i < rows.non_empty_array_size(); ++i) {
    ClusterPreset c = parse_row(rows.element(i));
    if (std::any_of(table.begin(), table.end(), [&](const ClusterPreset& o) { return equal_ignoring_case(o.key, c.key); })) {
      rows.element(i).fail_member("key", fmt::format("'{}' is another cluster's", c.key));
    }
    table.push_back(std::move(c));
  }
  return table;
}

std::vector<ClusterPreset> load_cluster_file(const std::filesystem::path& path) {
  return parse_clusters(read_text_file(path), "--cluster-file " + path.string());
}

std::span<const ClusterPreset> known_clusters() {
  static const std::vector<ClusterPreset> table = parse_clusters(kShippedClusters, "plan/clusters.json");
  return table;
}

ClusterPreset cluster_named(std::string_view key, std::span<const ClusterPreset> table) {
  for (const ClusterPreset& c : table) {
    if (equal_ignoring_case(c.key, key)) return c;
  }
  throw InputError(fmt::format("--cluster: unknown cluster '{}' (known: {})", key, cluster_keys(table)));
}

std::optional<ClusterPreset> cluster_from_flags(std::string_view key, const std::filesystem::path& cluster_file) {
  if (key.empty()) {
    if (!cluster_file.empty()) throw InputError("--cluster-file: name one of its clusters with --cluster");
    return std::nullopt;
  }
  std::vector<ClusterPreset> table;
  if (!cluster_file.empty()) table = load_cluster_file(cluster_file);
  table.insert(table.end(), known_clusters().begin(), known_clusters().end());
  return cluster_named(key, table);
}

std::string cluster_keys(std::span<const ClusterPreset> table) {
  std::vector<std::string_view> keys;
  for (const ClusterPreset& c : table) keys.push_back(c.key);
  return fmt::format("{}", fmt::join(keys, ", "));
}

}  // namespace gpipe::plan
