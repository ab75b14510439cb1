// The partitioner: the balanced split against a brute force over every
// composition (optimal largest stage, smallest sum of squares, documented
// tie-break), with and without a memory limit; uniform and explicit splits;
// the --partition flag's parsing and its error messages.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "models/partition.hpp"

namespace gpipe::models {
namespace {

using Costs = std::vector<std::int64_t>;

// The message of the InputError that `f` throws ("" and a test failure if none).
std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

// Sum of squared stage costs, exact for the small costs the brute force uses.
std::int64_t sum_of_squares(const std::vector<std::int64_t>& stage_costs) {
  std::int64_t s = 0;
  for (const auto c : stage_costs) s += c * c;
  return s;
}

// The reference: every composition of L into K positive parts, keeping those
// within the byte limit; the best by (largest stage, sum of squares), and among
// equals the lexicographically largest layers_per_stage.
std::optional<Partition> brute_force(const Costs& costs, int k, const Costs& bytes,
                                     std::int64_t limit) {
  std::optional<Partition> best;
  std::int64_t best_max = 0;
  std::int64_t best_squares = 0;
  std::vector<int> parts;
  const int layers = static_cast<int>(costs.size());
  std::function<void(int)> recurse = [&](int remaining) {
    if (static_cast<int>(parts.size()) == k) {
      if (remaining != 0) return;
      const Partition p{parts};
      if (!bytes.empty()) {
        const auto stage_bytes = sum_per_stage(p, bytes);
        if (std::ranges::any_of(stage_bytes, [&](auto b) { return b > limit; })) return;
      }
      const auto stage_costs = sum_per_stage(p, costs);
      const std::int64_t mx = std::ranges::max(stage_costs);
      const std::int64_t sq = sum_of_squares(stage_costs);
      if (!best || mx < best_max || (mx == best_max && sq < best_squares) ||
          (mx == best_max && sq == best_squares && parts > best->layers_per_stage)) {
        best = p;
        best_max = mx;
        best_squares = sq;
      }
      return;
    }
    for (int n = 1; n <= remaining; ++n) {
      parts.push_back(n);
      recurse(remaining - n);
      parts.pop_back();
    }
  };
  recurse(layers);
  return best;
}

// Cost generators, most of them rich in ties: kind 0 all equal, 1 from {1, 2},
// 2 from {0, 1} (zero-cost layers), 3 from 0..100 (few ties).
Costs random_costs(std::mt19937& rng, int layers, int kind) {
  constexpr std::array<std::int64_t, 4> kLow = {7, 1, 0, 0};
  constexpr std::array<std::int64_t, 4> kHigh = {7, 2, 1, 100};
  const auto k = static_cast<std::size_t>(kind);
  std::uniform_int_distribution<std::int64_t> pick(kLow[k], kHigh[k]);
  Costs costs;
  for (int i = 0; i < layers; ++i) costs.push_back(pick(rng));
  return costs;
}

TEST(Partition, Accessors) {
  const Partition p{{3, 1, 2}};
  EXPECT_EQ(p.num_stages(), 3);
  EXPECT_EQ(p.num_layers(), 6);
  EXPECT_EQ(p.first_layer(0), 0);
  EXPECT_EQ(p.first_layer(1), 3);
  EXPECT_EQ(p.first_layer(2), 4);
  EXPECT_EQ(p.end_layer(2), 6);
  const std::vector<int> stages = {0, 0, 0, 1, 2, 2};
  for (int layer = 0; layer < 6; ++layer) EXPECT_EQ(p.stage_of_layer(layer), stages[layer]);
  EXPECT_THROW((void)p.stage_of_layer(6), std::out_of_range);
  EXPECT_THROW((void)p.stage_of_layer(-1), std::out_of_range);
  EXPECT_THROW((void)p.first_layer(3), std::out_of_range);
  EXPECT_EQ(to_string(p), "3,1,2");
  EXPECT_EQ(sum_per_stage(p, Costs{1, 2, 3, 4, 5, 6}), (Costs{6, 4, 11}));
  EXPECT_THROW((void)sum_per_stage(p, Costs{1, 2}), std::invalid_argument);
}

TEST(PartitionUniform, LargerStagesFirst) {
  EXPECT_EQ(partition_uniform(10, 4).layers_per_stage, (std::vector<int>{3, 3, 2, 2}));
  EXPECT_EQ(partition_uniform(8, 4).layers_per_stage, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(partition_uniform(5, 5).layers_per_stage, (std::vector<int>{1, 1, 1, 1, 1}));
  EXPECT_EQ(partition_uniform(7, 1).layers_per_stage, (std::vector<int>{7}));
  EXPECT_EQ(partition_uniform(11, 3).layers_per_stage, (std::vector<int>{4, 4, 3}));
}

TEST(PartitionUniform, RejectsImpossibleStageCounts) {
  EXPECT_NE(input_error_of([] {
              (void)partition_uniform(3, 4);
            }).find("cannot split 3 layers into 4 stages"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { (void)partition_uniform(3, 0); }).find("--partition"),
            std::string::npos);
}

TEST(PartitionExplicit, AcceptsAValidList) {
  const std::vector<int> counts = {2, 5, 1};
  EXPECT_EQ(partition_explicit(counts, 8).layers_per_stage, counts);
}

TEST(PartitionExplicit, ErrorsNameTheFlagAndTheList) {
  EXPECT_EQ(input_error_of([] {
              (void)partition_explicit(std::vector<int>{3, 3, 3}, 8);
            }),
            "--partition 3,3,3 sums to 9 layers, the model has 8");
  const auto zero = input_error_of([] { (void)partition_explicit(std::vector<int>{4, 0, 4}, 8); });
  EXPECT_NE(zero.find("--partition 4,0,4: stage 1 has 0 layers"), std::string::npos) << zero;
  EXPECT_NE(input_error_of([] {
              (void)partition_explicit(std::vector<int>{9, -1}, 8);
            }).find("stage 1 has -1 layers"),
            std::string::npos);
  EXPECT_NE(
      input_error_of([] { (void)partition_explicit(std::vector<int>{}, 8); }).find("--partition"),
      std::string::npos);
}

TEST(PartitionBalanced, HandExamples) {
  // The heavy ends each need a stage of their own.
  EXPECT_EQ(partition_balanced(Costs{10, 1, 1, 1, 1, 1, 10}, 3).layers_per_stage,
            (std::vector<int>{1, 5, 1}));
  // Largest stage 4 either way; 4,2,2 has a smaller variance than 4,1,3 or 4,3,1.
  EXPECT_EQ(partition_balanced(Costs{4, 1, 1, 1, 1}, 3).layers_per_stage,
            (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(partition_balanced(Costs{5}, 1).layers_per_stage, (std::vector<int>{1}));
  EXPECT_EQ(partition_balanced(Costs{0, 0, 0}, 3).layers_per_stage, (std::vector<int>{1, 1, 1}));
}

TEST(PartitionBalanced, TieBreakGivesEarlierStagesTheExtraLayers) {
  // 3,2 and 2,3 tie on largest stage and variance: the lexicographically largest wins.
  EXPECT_EQ(partition_balanced(Costs{1, 1, 1, 1, 1}, 2).layers_per_stage, (std::vector<int>{3, 2}));
  // Equal costs give exactly the uniform split.
  for (int layers = 1; layers <= 40; ++layers) {
    for (int k = 1; k <= layers; ++k) {
      EXPECT_EQ(partition_balanced(Costs(static_cast<std::size_t>(layers), 1000), k),
                partition_uniform(layers, k))
          << layers << " layers, " << k << " stages";
    }
  }
  // Zero-cost layers change nothing in cost, so they go to the earliest stage that can take them.
  EXPECT_EQ(partition_balanced(Costs{5, 0, 0, 5}, 2).layers_per_stage, (std::vector<int>{3, 1}));
}

TEST(PartitionBalanced, MatchesBruteForceOverAllCompositions) {
  std::mt19937 rng(20240611);
  int cases = 0;
  for (int layers = 1; layers <= 10; ++layers) {
    for (int k = 1; k <= layers; ++k) {
      for (int kind = 0; kind < 4; ++kind) {
        for (int rep = 0; rep < (kind == 0 ? 1 : 30); ++rep) {
          const Costs costs = random_costs(rng, layers, kind);
          const auto expected = brute_force(costs, k, {}, 0);
          ASSERT_TRUE(expected.has_value());
          const Partition got = partition_balanced(costs, k);
          const auto got_costs = sum_per_stage(got, costs);
          const auto want_costs = sum_per_stage(*expected, costs);
          EXPECT_EQ(std::ranges::max(got_costs), std::ranges::max(want_costs));
          EXPECT_EQ(sum_of_squares(got_costs), sum_of_squares(want_costs));
          EXPECT_EQ(got, *expected)
              << "costs kind " << kind << ", " << layers << " layers, " << k << " stages: got "
              << to_string(got) << ", want " << to_string(*expected);
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 55 * 91);
}

TEST(PartitionBalanced, MemoryLimitMatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> pick_bytes(0, 10);
  int feasible = 0, infeasible = 0;
  for (int layers = 1; layers <= 9; ++layers) {
    for (int k = 1; k <= layers; ++k) {
      for (int kind = 0; kind < 4; ++kind) {
        for (int rep = 0; rep < 20; ++rep) {
          const Costs costs = random_costs(rng, layers, kind);
          Costs bytes;
          for (int i = 0; i < layers; ++i) bytes.push_back(pick_bytes(rng));
          const std::int64_t limit = std::uniform_int_distribution<std::int64_t>(0, 30)(rng);
          const auto expected = brute_force(costs, k, bytes, limit);
          if (expected) {
            EXPECT_EQ(partition_balanced(costs, k, bytes, limit), *expected);
            ++feasible;
          } else {
            EXPECT_THROW((void)partition_balanced(costs, k, bytes, limit), InputError);
            ++infeasible;
          }
        }
      }
    }
  }
  // Both outcomes are exercised many times.
  EXPECT_GT(feasible, 200);
  EXPECT_GT(infeasible, 100);
}

TEST(PartitionBalanced, MemoryLimitCanForceALargerLargestStage) {
  // Unconstrained: 2,2 (cost 2 each). Layers 0-1 together need 12 bytes > 10.
  const Costs costs{1, 1, 1, 1};
  EXPECT_EQ(partition_balanced(costs, 2).layers_per_stage, (std::vector<int>{2, 2}));
  EXPECT_EQ(partition_balanced(costs, 2, Costs{6, 6, 1, 1}, 10).layers_per_stage,
            (std::vector<int>{1, 3}));
  const auto message = input_error_of([&] {
    (void)partition_balanced(costs, 2, Costs{6, 6, 6, 1}, 10);
  });
  EXPECT_NE(message.find("no split of 4 layers into 2 stages keeps every stage within 10 bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(input_error_of([&] {
              (void)partition_balanced(costs, 2, Costs{1, 1}, 10);
            }).find("2 layer byte counts for 4 layers"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] {
              (void)partition_balanced(costs, 2, Costs{1, -1, 1, 1}, 10);
            }).find("layer 1 has a negative size"),
            std::string::npos);
  // Byte counts whose sum overflows int64 are simply too large, not an overflow.
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  EXPECT_EQ(partition_balanced(costs, 2, Costs{huge, huge, 0, 0}, huge).layers_per_stage,
            (std::vector<int>{1, 3}));
}

// Binary search on the largest stage with a greedy packing: an independent
// way to find the optimal largest stage, used where brute force is too slow.
std::int64_t min_max_by_bisection(const Costs& costs, int k) {
  auto stages_needed = [&](std::int64_t bound) {
    int stages = 1;
    std::int64_t current = 0;
    for (const auto c : costs) {
      if (c > bound) return std::numeric_limits<int>::max();
      if (current + c > bound) {
        ++stages;
        current = 0;
      }
      current += c;
    }
    return stages;
  };
  std::int64_t lo = 0, hi = 0;
  for (const auto c : costs) hi += c;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (stages_needed(mid) <= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

TEST(PartitionBalanced, LargeModelsAreOptimal) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::int64_t> pick(1, 5'000'000);
  Costs costs;
  for (int i = 0; i < 200; ++i) costs.push_back(pick(rng));
  for (const int k : {1, 2, 7, 64, 200}) {
    const Partition p = partition_balanced(costs, k);
    ASSERT_EQ(p.num_stages(), k);
    EXPECT_EQ(p.num_layers(), 200);
    EXPECT_TRUE(std::ranges::all_of(p.layers_per_stage, [](int n) { return n >= 1; }));
    EXPECT_EQ(std::ranges::max(sum_per_stage(p, costs)), min_max_by_bisection(costs, k)) << k;
  }
}

TEST(PartitionBalanced, HugeCostsUseExactSquares) {
  // Squares of these overflow int64 but not the 128-bit sums; same answer as 4,1,1,1,1.
  const std::int64_t x = 100'000'000'000'000'000;  // 1e17
  EXPECT_EQ(partition_balanced(Costs{4 * x, x, x, x, x}, 3).layers_per_stage,
            (std::vector<int>{1, 2, 2}));
  // After the 4x stage: x+1 | 1,x (squares 2(x+1)^2) beats x+1,1 | x (2 more), a
  // difference of 2 in ~1e34 that neither int64 nor long double could see.
  EXPECT_EQ(partition_balanced(Costs{4 * x, x + 1, 1, x}, 3).layers_per_stage,
            (std::vector<int>{1, 1, 2}));
}

TEST(PartitionBalanced, RejectsBadInput) {
  EXPECT_NE(input_error_of([] {
              (void)partition_balanced(Costs{1, 2, 3}, 4);
            }).find("--partition: cannot split 3 layers into 4 stages"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              (void)partition_balanced(Costs{1, 2, 3}, 0);
            }).find("cannot split 3 layers into 0 stages"),
            std::string::npos);
  EXPECT_EQ(input_error_of([] {
              (void)partition_balanced(Costs{1, 2, -3}, 2);
            }),
            "--partition balanced: layer 2 has a negative cost (-3 ns)");
  const std::int64_t half = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  EXPECT_NE(input_error_of([&] {
              (void)partition_balanced(Costs{half, half}, 2);
            }).find("sum to 2^63-1 ns or more"),
            std::string::npos);
}

TEST(PartitionSpec, ParsesTheThreeForms) {
  EXPECT_EQ(parse_partition_spec("balanced"), (PartitionSpec{PartitionMethod::balanced, {}}));
  EXPECT_EQ(parse_partition_spec("uniform"), (PartitionSpec{PartitionMethod::uniform, {}}));
  EXPECT_EQ(parse_partition_spec("4,4,8"), (PartitionSpec{PartitionMethod::counts, {4, 4, 8}}));
  EXPECT_EQ(parse_partition_spec("12"), (PartitionSpec{PartitionMethod::counts, {12}}));
  for (const char* text : {"balanced", "uniform", "4,4,8", "1"}) {
    EXPECT_EQ(to_string(parse_partition_spec(text)), text);
  }
  EXPECT_EQ(PartitionSpec{}.method, PartitionMethod::balanced);
}

TEST(PartitionSpec, RejectsMalformedText) {
  for (const char* bad : {"", "4,x", "4,,4", ",4", "4,", "-1,3", "+2,2", "4 ,4", "4,0",
                          "99999999999", "Balanced", "2.5,3"}) {
    const std::string message = input_error_of([&] { (void)parse_partition_spec(bad); });
    EXPECT_NE(message.find(std::string("--partition '") + bad + "'"), std::string::npos) << message;
  }
  EXPECT_NE(input_error_of([] {
              (void)parse_partition_spec("4,x");
            }).find("entry 1 'x' is not a layer count"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { (void)parse_partition_spec("4,0"); }).find("stage 1 has 0 layers"),
            std::string::npos);
}

TEST(PartitionSpec, MakePartitionAppliesTheSpec) {
  const Costs costs{9, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(make_partition(parse_partition_spec("balanced"), costs, 2).layers_per_stage,
            (std::vector<int>{1, 7}));
  EXPECT_EQ(make_partition(parse_partition_spec("uniform"), costs, 3).layers_per_stage,
            (std::vector<int>{3, 3, 2}));
  EXPECT_EQ(make_partition(parse_partition_spec("2,6"), costs, 2).layers_per_stage,
            (std::vector<int>{2, 6}));
  EXPECT_EQ(input_error_of([&] { (void)make_partition(parse_partition_spec("3,3,3"), costs, 3); }),
            "--partition 3,3,3 sums to 9 layers, the model has 8");
  EXPECT_EQ(input_error_of([&] { (void)make_partition(parse_partition_spec("4,4"), costs, 4); }),
            "--partition 4,4 lists 2 stages, but --stages is 4");
  EXPECT_NE(input_error_of([&] {
              (void)make_partition(parse_partition_spec("uniform"), costs, 9);
            }).find("cannot split 8 layers into 9 stages"),
            std::string::npos);
}

}  // namespace
}  // namespace gpipe::models
