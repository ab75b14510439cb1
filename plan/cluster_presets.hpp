// Named clusters: a device, the GPUs a node and each GPU's share of the
// network between nodes (`--cluster KEY`). The table is plan/clusters.json,
// built into the tools, each row with its source; `--cluster-file F` adds
// a user's own, in the same form.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiles/collectives.hpp"

namespace gpipe::plan {

struct ClusterPreset {
  std::string key;     // what --cluster takes: "dgx-a100"
  std::string name;    // "NVIDIA DGX A100 SuperPOD (Selene)"
  std::string device;  // a key of profiles/devices.json
  int gpus_per_node = 1;
  profiles::CollectiveLink inter_node;  // each GPU's share, one way
  std::string source;
  bool operator==(const ClusterPreset&) const = default;
};

// The shipped table (plan/clusters.json), in its order.
[[nodiscard]] std::span<const ClusterPreset> known_clusters();

// A table in clusters.json's form; `origin` names it in errors. InputError,
// one line naming the row and the field: missing, of the wrong type, out of
// range, a key twice.
[[nodiscard]] std::vector<ClusterPreset> parse_clusters(std::string_view json, std::string_view origin);
// The same from a file (--cluster-file): "--cluster-file F: ..." in errors.
[[nodiscard]] std::vector<ClusterPreset> load_cluster_file(const std::filesystem::path& path);

// The preset of `table` whose key is `key`, case-insensitively; InputError
// "--cluster: unknown cluster 'x' (known: dgx-a100, ...)" otherwise.
[[nodiscard]] ClusterPreset cluster_named(std::string_view key, std::span<const ClusterPreset> table = known_clusters());

// What --cluster KEY and --cluster-file F name: none when KEY is empty; else
// the preset KEY of F's table (when F is given, its rows first) and the
// shipped one. InputError for an unknown key, a bad file, or F without KEY.
[[nodiscard]] std::optional<ClusterPreset> cluster_from_flags(std::string_view key,
                                                              const std::filesystem::path& cluster_file);

// "dgx-a100, dgx-h100, ...", for help texts and errors.
[[nodiscard]] std::string cluster_keys(std::span<const ClusterPreset> table = known_clusters());

}  // namespace gpipe::plan
