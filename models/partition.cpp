#include "models/partition.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"

namespace gpipe::models {
namespace {

// Squared stage costs need 126 bits: every stage cost is at most the total,
// which is below 2^63 - 1 (checked), and a sum of squares of non-negative parts
// is at most the square of their sum, so below 2^126. `__extension__` keeps
// -Wpedantic quiet about the type; std::numeric_limits does not know it in
// strict C++20 mode, hence the explicit sentinel.
__extension__ typedef __int128 Int128;

constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
// "No split": above every real value of each pass.
constexpr Int128 kNoSplit128 = Int128{1} << 126;

void check_stage_count(int num_layers, int num_stages) {
  if (num_stages < 1) {
    throw InputError(fmt::format(
        "--partition: cannot split {} layers into {} stages (need at least one stage)",
        num_layers, num_stages));
  }
  if (num_stages > num_layers) {
    throw InputError(fmt::format(
        "--partition: cannot split {} layers into {} stages (every stage needs at least one layer)",
        num_layers, num_stages));
  }
}

// The layers and the optional memory limit, with the running sums a stage
// [i, j) needs. Byte sums saturate at int64's maximum, which keeps the test
// `bytes <= limit` exact however large the counts are.
struct Problem {
  std::span<const std::int64_t> cost;
  std::span<const std::int64_t> bytes;  // empty: no memory limit
  std::int64_t byte_limit = kMax64;

  [[nodiscard]] int num_layers() const { return static_cast<int>(cost.size()); }
  [[nodiscard]] std::int64_t layer_bytes(int layer) const {
    return bytes.empty() ? 0 : bytes[static_cast<std::size_t>(layer)];
  }
};

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return b > kMax64 - a ? kMax64 : a + b;
}

// best[k][i] (k stages for layers i..L-1) as a flat table; suffix form so that
// the reconstruction can walk forward from layer 0 and choose each stage's size.
// Cells that no split reaches hold `none`.
template <class T>
class SuffixTable {
 public:
  SuffixTable(int num_stages, int num_layers, T none)
      : width_(num_layers + 1), cells_(static_cast<std::size_t>((num_stages + 1) * width_), none) {
    at(0, num_layers) = T{0};
  }
  [[nodiscard]] T& at(int k, int i) { return cells_[static_cast<std::size_t>(k * width_ + i)]; }

 private:
  int width_;
  std::vector<T> cells_;
};

// Calls visit(j, stage_cost) for every allowed end j of a stage starting at
// layer i: within the byte limit, within cost_limit, and leaving at least
// `stages_after` layers for the stages after it. Costs and bytes only grow
// with j, so the walk stops at the first stage that is too large.
template <class Visit>
void for_each_stage_end(const Problem& p, int i, int stages_after, std::int64_t cost_limit,
                        Visit visit) {
  std::int64_t cost = 0;
  std::int64_t bytes = 0;
  for (int j = i + 1; j <= p.num_layers() - stages_after; ++j) {
    cost += p.cost[static_cast<std::size_t>(j - 1)];
    bytes = saturating_add(bytes, p.layer_bytes(j - 1));
    if (cost > cost_limit || bytes > p.byte_limit) return;
    visit(j, cost);
  }
}

// The fewest stages that keep every stage within `cost_limit` and the byte
// limit, packing each stage as full as it goes; nullopt when one layer alone
// breaks the byte limit. Splitting a stage only lowers its cost and bytes, so
// `num_stages` stages fit exactly when this many or fewer do.
std::optional<int> greedy_stage_count(const Problem& p, std::int64_t cost_limit) {
  int stages = 0;
  std::int64_t cost = 0;
  std::int64_t bytes = 0;
  bool open = false;
  for (int layer = 0; layer < p.num_layers(); ++layer) {
    const std::int64_t c = p.cost[static_cast<std::size_t>(layer)];
    const std::int64_t b = p.layer_bytes(layer);
    if (c > cost_limit || b > p.byte_limit) return std::nullopt;
    if (open && cost + c <= cost_limit && saturating_add(bytes, b) <= p.byte_limit) {
      cost += c;
      bytes = saturating_add(bytes, b);
    } else {
      ++stages;
      cost = c;
      bytes = b;
      open = true;
    }
  }
  return stages;
}

// Pass 1: the smallest achievable largest stage cost, or nullopt when no split
// respects the byte limit. A binary search over the cost with the greedy count
// as the test: O(L log total) where the table would take O(K L^2) (20 s at
// 16384 layers and K = 64).
std::optional<std::int64_t> min_max_stage_cost(const Problem& p, int num_stages) {
  std::int64_t low = 0;  // never fits (unless every layer costs 0: then 0 fits)
  std::int64_t high = 0;
  for (int layer = 0; layer < p.num_layers(); ++layer) high += p.cost[static_cast<std::size_t>(layer)];
  const auto fits = [&](std::int64_t limit) {
    const std::optional<int> count = greedy_stage_count(p, limit);
    return count && *count <= num_stages;
  };
  if (!fits(high)) return std::nullopt;  // only the byte limit can refuse the whole model in one go
  if (fits(0)) return 0;
  while (high - low > 1) {  // fits(high), !fits(low)
    const std::int64_t mid = low + (high - low) / 2;
    (fits(mid) ? high : low) = mid;
  }
  return high;
}

// Pass 2: among splits whose stages all cost <= bound, the smallest sum of
// squared stage costs; then the walk from layer 0 gives each stage the most
// layers that still reaches that optimum (the lexicographically largest split).
Partition min_square_split(const Problem& p, int num_stages, std::int64_t bound) {
  const int layers = p.num_layers();
  SuffixTable<Int128> best(num_stages, layers, kNoSplit128);
  for (int k = 1; k <= num_stages; ++k) {
    for (int i = layers - k; i >= num_stages - k && i >= 0; --i) {
      Int128& cell = best.at(k, i);
      for_each_stage_end(p, i, k - 1, bound, [&](int j, std::int64_t cost) {
        const Int128 rest = best.at(k - 1, j);
        if (rest != kNoSplit128) cell = std::min(cell, Int128{cost} * cost + rest);
      });
    }
  }
  Partition partition;
  int i = 0;
  for (int k = num_stages; k >= 1; --k) {
    const Int128 target = best.at(k, i);
    int chosen = -1;
    for_each_stage_end(p, i, k - 1, bound, [&](int j, std::int64_t cost) {
      const Int128 rest = best.at(k - 1, j);
      if (rest != kNoSplit128 && Int128{cost} * cost + rest == target) chosen = j;
    });
    // Pass 1 proved a split within `bound` exists, so some end reaches the optimum.
    if (chosen < 0) throw std::logic_error("partition_balanced: reconstruction failed");
    partition.layers_per_stage.push_back(chosen - i);
    i = chosen;
  }
  return partition;
}

Partition solve_balanced(const Problem& p, int num_stages) {
  check_stage_count(p.num_layers(), num_stages);
  std::int64_t total = 0;
  for (int layer = 0; layer < p.num_layers(); ++layer) {
    const std::int64_t c = p.cost[static_cast<std::size_t>(layer)];
    if (c < 0) {
      throw InputError(
          fmt::format("--partition balanced: layer {} has a negative cost ({} ns)", layer, c));
    }
    if (c >= kMax64 - total) {
      throw InputError("--partition balanced: the layer costs sum to 2^63-1 ns or more");
    }
    total += c;
  }
  const auto bound = min_max_stage_cost(p, num_stages);
  if (!bound) {
    throw InputError(fmt::format(
        "--partition balanced: no split of {} layers into {} stages keeps every stage within {} "
        "bytes",
        p.num_layers(), num_stages, p.byte_limit));
  }
  return min_square_split(p, num_stages, *bound);
}

void check_index(int index, int size, const char* what) {
  if (index < 0 || index >= size) {
    throw std::out_of_range(
        fmt::format("Partition: {} {} out of range [0, {})", what, index, size));
  }
}

}  // namespace

int Partition::num_stages() const { return static_cast<int>(layers_per_stage.size()); }

int Partition::num_layers() const {
  return std::accumulate(layers_per_stage.begin(), layers_per_stage.end(), 0);
}

int Partition::first_layer(int stage) const {
  check_index(stage, num_stages(), "stage");
  return std::accumulate(layers_per_stage.begin(), layers_per_stage.begin() + stage, 0);
}

int Partition::end_layer(int stage) const {
  return first_layer(stage) + layers_per_stage[static_cast<std::size_t>(stage)];
}

int Partition::stage_of_layer(int layer) const {
  check_index(layer, num_layers(), "layer");
  int end = 0;
  for (int s = 0; s < num_stages(); ++s) {
    end += layers_per_stage[static_cast<std::size_t>(s)];
    if (layer < end) return s;
  }
  throw std::logic_error("Partition::stage_of_layer: unreachable");
}

std::string to_string(const Partition& partition) {
  return fmt::format("{}", fmt::join(partition.layers_per_stage, ","));
}

std::vector<std::int64_t> sum_per_stage(const Partition& partition,
                                        std::span<const std::int64_t> per_layer) {
  if (static_cast<int>(per_layer.size()) != partition.num_layers()) {
    throw std::invalid_argument(fmt::format("sum_per_stage: {} values for {} layers",
                                            per_layer.size(), partition.num_layers()));
  }
  std::vector<std::int64_t> sums;
  auto it = per_layer.begin();
  for (const int n : partition.layers_per_stage) {
    sums.push_back(std::accumulate(it, it + n, std::int64_t{0}));
    it += n;
  }
  return sums;
}

Partition partition_balanced(std::span<const std::int64_t> layer_cost_ns, int num_stages) {
  return solve_balanced(Problem{layer_cost_ns, {}, kMax64}, num_stages);
}

Partition partition_balanced(std::span<const std::int64_t> layer_cost_ns, int num_stages,
                             std::span<const std::int64_t> layer_bytes,
                             std::int64_t stage_byte_limit) {
  if (layer_bytes.size() != layer_cost_ns.size()) {
    throw InputError(fmt::format("--partition balanced: {} layer byte counts for {} layers",
                                 layer_bytes.size(), layer_cost_ns.size()));
  }
  for (std::size_t layer = 0; layer < layer_bytes.size(); ++layer) {
    if (layer_bytes[layer] < 0) {
      throw InputError(fmt::format("--partition balanced: layer {} has a negative size ({} bytes)",
                                   layer, layer_bytes[layer]));
    }
  }
  return solve_balanced(Problem{layer_cost_ns, layer_bytes, stage_byte_limit}, num_stages);
}

Partition partition_uniform(int num_layers, int num_stages) {
  check_stage_count(num_layers, num_stages);
  Partition partition;
  for (int s = 0; s < num_stages; ++s) {
    partition.layers_per_stage.push_back(num_layers / num_stages +
                                         (s < num_layers % num_stages ? 1 : 0));
  }
  return partition;
}

Partition partition_explicit(std::span<const int> counts, int num_layers) {
  Partition partition{std::vector<int>(counts.begin(), counts.end())};
  const std::string text = to_string(partition);
  if (counts.empty()) throw InputError("--partition: the list of layer counts is empty");
  long long sum = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] < 1) {
      throw InputError(fmt::format(
          "--partition {}: stage {} has {} layers; every stage needs at least one", text, s,
          counts[s]));
    }
    sum += counts[s];
  }
  if (sum != num_layers) {
    throw InputError(
        fmt::format("--partition {} sums to {} layers, the model has {}", text, sum, num_layers));
  }
  return partition;
}

PartitionSpec parse_partition_spec(std::string_view text) {
  if (text == "balanced") return PartitionSpec{PartitionMethod::balanced, {}};
  if (text == "uniform") return PartitionSpec{PartitionMethod::uniform, {}};
  auto fail = [&](std::string_view why) {
    return InputError(fmt::format(
        "--partition '{}': {} (expected balanced, uniform or layers per stage such as 4,4,8)",
        text, why));
  };
  PartitionSpec spec{PartitionMethod::counts, {}};
  std::string_view rest = text;
  while (true) {
    const std::string_view item = rest.substr(0, rest.find(','));
    int value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || item.front() == '-' || item.front() == '+' || ec != std::errc{} ||
        end != item.data() + item.size()) {
      throw fail(fmt::format("entry {} '{}' is not a layer count", spec.counts.size(), item));
    }
    if (value == 0) {
      throw fail(
          fmt::format("stage {} has 0 layers; every stage needs at least one", spec.counts.size()));
    }
    spec.counts.push_back(value);
    if (item.size() == rest.size()) break;
    rest.remove_prefix(item.size() + 1);
  }
  return spec;
}

std::string to_string(const PartitionSpec& spec) {
  switch (spec.method) {
    case PartitionMethod::balanced:
      return "balanced";
    case PartitionMethod::uniform:
      return "uniform";
    case PartitionMethod::counts:
      return fmt::format("{}", fmt::join(spec.counts, ","));
  }
  throw std::logic_error("to_string(PartitionSpec): unknown method");
}

Partition make_partition(const PartitionSpec& spec, std::span<const std::int64_t> layer_cost_ns,
                         int num_stages) {
  const int num_layers = static_cast<int>(layer_cost_ns.size());
  switch (spec.method) {
    case PartitionMethod::balanced:
      return partition_balanced(layer_cost_ns, num_stages);
    case PartitionMethod::uniform:
      return partition_uniform(num_layers, num_stages);
    case PartitionMethod::counts:
      if (static_cast<int>(spec.counts.size()) != num_stages) {
        throw InputError(fmt::format("--partition {} lists {} stages, but --stages is {}",
                                     to_string(spec), spec.counts.size(), num_stages));
      }
      return partition_explicit(spec.counts, num_layers);
  }
  throw std::logic_error("make_partition: unknown method");
}

}  // namespace gpipe::models
