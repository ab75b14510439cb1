// The links of a pipeline laid out on a cluster (plan/cluster.hpp): two ranks
// on one node talk over the node's link (the profile's, NVLink), two on
// different nodes over the inter-node one (a GPU's share of the network).
//
// With Megatron-LM's scatter/gather (Narayanan et al. 2021, arXiv 2104.04473,
// section 4.1), a stage of T tensor-parallel GPUs whose activation every GPU
// holds whole (no sequence parallelism) sends it between nodes in T pieces,
// one over each GPU's own NIC, and the receiving node all-gathers the pieces
// over its link: bytes / T between nodes, then a ring all-gather, T - 1 steps
// of bytes / T inside the node, on the message's way.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/link_model.hpp"

namespace gpipe::sim {

class PlacedLink final : public LinkModel {
 public:
  // node_of_rank[r]: the node rank r's GPUs sit on; `scatter_gather`: the
  // T of a stage whose messages between nodes are scattered, 1 for none.
  PlacedLink(std::vector<int> node_of_rank, UniformLink intra_node, UniformLink inter_node, int scatter_gather = 1)
      : node_of_rank_(std::move(node_of_rank)), intra_(intra_node), inter_(inter_node), pieces_(scatter_gather) {}

  [[nodiscard]] std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to,
                                         std::int64_t bytes) const override {
    if (node_of_rank_.at(from.at()) == node_of_rank_.at(to.at())) return intra_.transfer_ns(from, to, bytes);
    if (pieces_ <= 1) return inter_.transfer_ns(from, to, bytes);
    const std::int64_t piece = (bytes + pieces_ - 1) / pieces_;
    return inter_.transfer_ns(from, to, piece) + (pieces_ - 1) * intra_.transfer_ns(to, to, piece);
  }

 private:
  std::vector<int> node_of_rank_;
  UniformLink intra_;
  UniformLink inter_;
  int pieces_ = 1;
};

}  // namespace gpipe::sim
