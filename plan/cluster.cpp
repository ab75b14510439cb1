#include "plan/cluster.hpp"

#include <set>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::plan {

ClusterPlacement::ClusterPlacement(const ClusterShape& cluster, const Parallelism& p)
    : cluster_(cluster), parallelism_(p) {
  if (cluster.gpus < 1) throw InputError(fmt::format("--gpus {}: a cluster has at least one GPU", cluster.gpus));
  if (cluster.gpus_per_node < 1) {
    throw InputError(fmt::format("--gpus-per-node {}: a node has at least one GPU", cluster.gpus_per_node));
  }
  if (p.tensor < 1 || p.pipeline < 1 || p.data < 1 || p.context < 1) {
    throw InputError(fmt::format("--tensor-parallel {}{}, --stages {}, --data-parallel {}: each is at least 1",
                                 p.tensor, p.context == 1 ? "" : fmt::format(", --context-parallel {}", p.context),
                                 p.pipeline, p.data));
  }
  const long long gpus = static_cast<long long>(p.stage_gpus()) * p.pipeline * p.data;
  if (gpus != cluster.gpus) {
    throw InputError(fmt::format("--tensor-parallel {}{} x --stages {} x --data-parallel {} = {} GPUs, but --gpus is {}",
                                 p.tensor, p.context > 1 ? fmt::format(" x --context-parallel {}", p.context) : "",
                                 p.pipeline, p.data, gpus, cluster.gpus));
  }
  if (cluster.gpus_per_node % p.tensor != 0) {
    throw InputError(fmt::format("--tensor-parallel {} does not divide --gpus-per-node {}: a tensor-parallel group "
                                 "lies inside one node",
                                 p.tensor, cluster.gpus_per_node));
  }
  if (cluster.gpus_per_node % p.stage_gpus() != 0 && p.stage_gpus() % cluster.gpus_per_node != 0) {
    throw InputError(fmt::format("--tensor-parallel {} x --context-parallel {} = {} GPUs a stage: neither divides nor "
                                 "fills whole nodes of {}",
                                 p.tensor, p.context, p.stage_gpus(), cluster.gpus_per_node));
  }
}

int ClusterPlacement::gpu(int replica, int stage, int tp_rank) const {
  return (replica * parallelism_.pipeline + stage) * parallelism_.stage_gpus() + tp_rank;
}

bool ClusterPlacement::boundary_crosses_nodes(int stage) const {
  // Replica 0's: every replica starts at a multiple of K T, and the layout repeats
  // when K T and G agree; where they do not, a boundary crosses in some replica.
  for (int d = 0; d < parallelism_.data; ++d) {
    if (node_of(gpu(d, stage, parallelism_.stage_gpus() - 1)) != node_of(gpu(d, stage + 1, 0))) return true;
  }
  return false;
}

std::vector<int> ClusterPlacement::data_parallel_group(int stage, int tp_rank) const {
  std::vector<int> group;
  for (int d = 0; d < parallelism_.data; ++d) group.push_back(gpu(d, stage, tp_rank));
  return group;
}

int ClusterPlacement::nodes_spanned_by_data_parallel_group() const {
  std::set<int> nodes;
  for (const int g : data_parallel_group(0, 0)) nodes.insert(node_of(g));
  return static_cast<int>(nodes.size());
}

std::string ClusterPlacement::describe() const {
  const Parallelism& p = parallelism_;
  int inside = 0;
  for (int k = 0; k + 1 < p.pipeline; ++k) inside += boundary_crosses_nodes(k) ? 0 : 1;
  const int nodes = (cluster_.gpus + cluster_.gpus_per_node - 1) / cluster_.gpus_per_node;
  const int last = cluster_.gpus - (nodes - 1) * cluster_.gpus_per_node;
  return fmt::format(
      "{} GPUs, {} node{} of {}{}: TP {} inside a node{}, {} stages to a pipeline, {} pipelines; stage boundaries "
      "inside a node: {} of {}; a DP group spans {} node(s)",
      cluster_.gpus, nodes, nodes == 1 ? "" : "s", cluster_.gpus_per_node,
      last == cluster_.gpus_per_node ? "" : fmt::format(" (the last with {})", last), p.tensor,
      p.context > 1 ? fmt::format(", CP {} beside it ({} GPUs a stage)", p.context, p.stage_gpus()) : "", p.pipeline,
      p.data, inside, p.pipeline - 1, nodes_spanned_by_data_parallel_group());
}

}  // namespace gpipe::plan
