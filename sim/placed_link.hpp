// The links of a pipeline laid out on a cluster (plan/cluster.hpp): two ranks
// on one node talk over the node's link (the profile's, NVLink), two on
// different nodes over the inter-node one (a GPU's share of the network).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/link_model.hpp"

namespace gpipe::sim {

class PlacedLink final : public LinkModel {
 public:
  // node_of_rank[r]: the node rank r's GPUs sit on.
  PlacedLink(std::vector<int> node_of_rank, UniformLink intra_node, UniformLink inter_node)
      : node_of_rank_(std::move(node_of_rank)), intra_(intra_node), inter_(inter_node) {}

  [[nodiscard]] std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to,
                                         std::int64_t bytes) const override {
    const bool same = node_of_rank_.at(from.at()) == node_of_rank_.at(to.at());
    return (same ? intra_ : inter_).transfer_ns(from, to, bytes);
  }

 private:
  std::vector<int> node_of_rank_;
  UniformLink intra_;
  UniformLink inter_;
};

}  // namespace gpipe::sim
