// Collectives over n ranks (tensor and data parallelism): how long
// an all-reduce, all-gather or reduce-scatter of a buffer takes, by ring and,
// for the all-reduce, by tree, the faster of the two where NCCL would pick.
// Bytes and bandwidth are nccl-tests' ("size" and bus bandwidth):
//   - all-reduce: `bytes` is the buffer every rank holds, in and out;
//   - all-gather: `bytes` is the gathered output on each rank (n pieces);
//   - reduce-scatter: `bytes` is each rank's input (n pieces, one kept);
//   - the link is each rank's, one way: `latency_us` per step and
//     `bandwidth_GBps` (the link model's parameters, link_model.hpp).
// The closed forms, with a = latency, S = bytes and B = bandwidth:
//   ring all-reduce      2(n-1) (a + S/(nB))     (reduce-scatter, then all-gather)
//   ring all-gather      (n-1) (a + S/(nB))
//   ring reduce-scatter  (n-1) (a + S/(nB))
//   tree all-reduce      2 ceil(log2 n) a + 2 S/B  (NCCL's double binary tree:
//                        a reduction up and a broadcast down, pipelined, so
//                        every byte crosses a rank's link twice)
// With no latency the ring's bus bandwidth, algorithm bandwidth S/t times
// nccl-tests' factor (bus_factor), is B exactly. One rank: 0.
#pragma once

#include <cstdint>
#include <string_view>

#include "models/collective.hpp"

namespace gpipe::profiles {

using models::Collective;
enum class CollectiveAlgorithm : std::uint8_t { ring, tree };

[[nodiscard]] std::string_view to_string(CollectiveAlgorithm algorithm);

struct CollectiveLink {
  double latency_us = 0;
  double bandwidth_GBps = 1;
  bool operator==(const CollectiveLink&) const = default;
};

// The closed form of `algorithm` (tree only for the all-reduce: InputError
// otherwise), rounded to the nearest ns; InputError for n < 1, bytes < 0 or a
// bandwidth that is not a finite positive number.
[[nodiscard]] std::int64_t collective_ns(Collective collective, CollectiveAlgorithm algorithm, int ranks,
                                         std::int64_t bytes, const CollectiveLink& link);

struct CollectiveCost {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  std::int64_t ns = 0;
};
// The faster of the algorithms the collective has (the ring on a tie).
[[nodiscard]] CollectiveCost fastest_collective(Collective collective, int ranks, std::int64_t bytes,
                                                const CollectiveLink& link);

// nccl-tests' bus bandwidth factor: busbw = (bytes / time) x this.
// all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n.
[[nodiscard]] double bus_factor(Collective collective, int ranks);

}  // namespace gpipe::profiles
