// The collectives' closed forms (profiles/collectives.hpp), to the ns, and
// nccl-tests' bus bandwidth convention.
#include <gtest/gtest.h>

#include "profiles/collectives.hpp"
#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

using gpipe::testing::error_of;

// 1 us a step, 1 GB/s: 1000 bytes take 1 us.
constexpr CollectiveLink kOneAndOne{1.0, 1.0};

TEST(Collectives, RingClosedForms) {
  // n = 4, S = 4000: four pieces of 1000 bytes, 2 us a step.
  EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::ring, 4, 4000, kOneAndOne), 2 * 3 * 2000);
  EXPECT_EQ(collective_ns(Collective::all_gather, CollectiveAlgorithm::ring, 4, 4000, kOneAndOne), 3 * 2000);
  EXPECT_EQ(collective_ns(Collective::reduce_scatter, CollectiveAlgorithm::ring, 4, 4000, kOneAndOne), 3 * 2000);
  // An all-reduce is a reduce-scatter and an all-gather of the same buffer.
  for (const int n : {2, 3, 5, 8, 64}) {
    const std::int64_t s = 6'000'000;
    EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::ring, n, s, kOneAndOne),
              collective_ns(Collective::reduce_scatter, CollectiveAlgorithm::ring, n, s, kOneAndOne) +
                  collective_ns(Collective::all_gather, CollectiveAlgorithm::ring, n, s, kOneAndOne))
        << n;
  }
  // One rank: nothing moves.
  EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::ring, 1, 4000, kOneAndOne), 0);
  EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::tree, 1, 4000, kOneAndOne), 0);
}

TEST(Collectives, TreeClosedFormAndTheFasterAlgorithm) {
  // n = 4: depth 2, so 4 latencies; 2 S / B.
  EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::tree, 4, 400, kOneAndOne), 4000 + 800);
  EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::tree, 5, 0, kOneAndOne), 6000);  // depth 3
  EXPECT_EQ(collective_ns(Collective::all_reduce, CollectiveAlgorithm::tree, 2, 0, kOneAndOne), 2000);  // depth 1
  // Small buffers are latency-bound: the tree's 2 log2 n steps beat the ring's 2(n-1).
  const CollectiveCost small = fastest_collective(Collective::all_reduce, 4, 400, kOneAndOne);
  EXPECT_EQ(small.algorithm, CollectiveAlgorithm::tree);
  EXPECT_EQ(small.ns, 4800);  // the ring: 6 x 1.1 us = 6600 ns
  // Large ones are bandwidth-bound: the ring moves 2(n-1)/n S, less than the tree's 2 S.
  const CollectiveCost large = fastest_collective(Collective::all_reduce, 4, 40000, kOneAndOne);
  EXPECT_EQ(large.algorithm, CollectiveAlgorithm::ring);
  EXPECT_EQ(large.ns, 6 * 11000);
  EXPECT_EQ(fastest_collective(Collective::all_gather, 4, 400, kOneAndOne).algorithm, CollectiveAlgorithm::ring);
}

// nccl-tests: busbw = algbw x factor; without latency the ring runs at the link's bandwidth.
TEST(Collectives, BusBandwidthIsTheLinksWithoutLatency) {
  const CollectiveLink fast{0.0, 50.0};
  const std::int64_t s = 1'000'000'000;
  for (const Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
    for (const int n : {2, 4, 8}) {
      const double seconds = static_cast<double>(collective_ns(c, CollectiveAlgorithm::ring, n, s, fast)) * 1e-9;
      const double busbw_GBps = static_cast<double>(s) / seconds * bus_factor(c, n) / 1e9;
      EXPECT_NEAR(busbw_GBps, 50.0, 1e-6) << to_string(c) << " n=" << n;
    }
  }
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 8), 7.0 / 8);
}

TEST(Collectives, RefusesWhatCannotBe) {
  EXPECT_EQ(error_of([] { (void)collective_ns(Collective::all_reduce, CollectiveAlgorithm::ring, 0, 8, kOneAndOne); }),
            "all-reduce over 0 ranks: a collective needs at least one");
  EXPECT_EQ(error_of([] { (void)collective_ns(Collective::all_gather, CollectiveAlgorithm::tree, 4, 8, kOneAndOne); }),
            "all-gather has no tree algorithm here: a ring");
  EXPECT_EQ(error_of([] { (void)collective_ns(Collective::reduce_scatter, CollectiveAlgorithm::ring, 4, -1, kOneAndOne); }),
            "reduce-scatter of -1 bytes: the bytes must be 0 or more");
  EXPECT_EQ(error_of([] { (void)collective_ns(Collective::all_reduce, CollectiveAlgorithm::ring, 4, 8, {1.0, 0.0}); }),
            "all-reduce: bandwidth 0 GB/s is not a finite positive number");
}

}  // namespace
}  // namespace gpipe::profiles
