// How a model's layers are split into K pipeline stages: contiguous groups, at
// least one layer each. Three ways to choose the split, as the `--partition` flag
// offers them: `balanced` (GPipe's partitioner, the default), `uniform` and an
// explicit list `n1,n2,...` of layers per stage.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::models {

// Stage s holds layers [first_layer(s), end_layer(s)). Accessors throw
// std::out_of_range for an index outside the partition.
struct Partition {
  std::vector<int> layers_per_stage;

  [[nodiscard]] int num_stages() const;
  [[nodiscard]] int num_layers() const;
  [[nodiscard]] int first_layer(int stage) const;
  [[nodiscard]] int end_layer(int stage) const;  // one past the stage's last layer
  [[nodiscard]] int stage_of_layer(int layer) const;

  bool operator==(const Partition&) const = default;
};

// The flag's list form, "3,3,2,2".
[[nodiscard]] std::string to_string(const Partition& partition);

// Sums a per-layer quantity (costs, bytes) over each stage's layers; `per_layer`
// must have one entry per layer of the partition.
[[nodiscard]] std::vector<std::int64_t> sum_per_stage(const Partition& partition,
                                                      std::span<const std::int64_t> per_layer);

// GPipe's partitioner, exact: among all contiguous splits into `num_stages`
// non-empty stages, the ones with the smallest largest stage cost; among those,
// the smallest sum of squared stage costs (the total is fixed, so this is the
// smallest variance); among those, the lexicographically largest
// layers_per_stage (earlier stages take the extra layers), so that equal costs
// give exactly partition_uniform's split. Costs are integer nanoseconds so that
// ties are exact. O(K L^2) time, O(K L) memory.
// Throws InputError for num_stages < 1, more stages than layers, a negative cost
// or costs whose total does not fit in int64.
[[nodiscard]] Partition partition_balanced(std::span<const std::int64_t> layer_cost_ns,
                                           int num_stages);

// The same, restricted to splits where no stage's summed `layer_bytes` exceeds
// `stage_byte_limit`; throws InputError when no split fits (or for a negative byte
// count, or a `layer_bytes` of another length than the costs).
[[nodiscard]] Partition partition_balanced(std::span<const std::int64_t> layer_cost_ns,
                                           int num_stages,
                                           std::span<const std::int64_t> layer_bytes,
                                           std::int64_t stage_byte_limit);

// Sizes differ by at most one, the larger first (as torch.tensor_split):
// 10 layers into 4 stages is 3,3,2,2.
[[nodiscard]] Partition partition_uniform(int num_layers, int num_stages);

// Checks an explicit list: every entry >= 1 and the entries sum to num_layers.
[[nodiscard]] Partition partition_explicit(std::span<const int> counts, int num_layers);

enum class PartitionMethod { balanced, uniform, counts };

// The parsed `--partition` value.
struct PartitionSpec {
  PartitionMethod method = PartitionMethod::balanced;
  std::vector<int> counts;  // layers per stage, only for PartitionMethod::counts

  bool operator==(const PartitionSpec&) const = default;
};

// Parses "balanced", "uniform" or "n1,n2,..." (positive decimals, no spaces);
// throws InputError naming --partition and the text otherwise.
[[nodiscard]] PartitionSpec parse_partition_spec(std::string_view text);
[[nodiscard]] std::string to_string(const PartitionSpec& spec);

// Applies a spec to a model of layer_cost_ns.size() layers; a list must have
// exactly num_stages entries summing to the number of layers.
[[nodiscard]] Partition make_partition(const PartitionSpec& spec,
                                       std::span<const std::int64_t> layer_cost_ns, int num_stages);

}  // namespace gpipe::models
