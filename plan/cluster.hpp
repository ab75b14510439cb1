// Where the GPUs of a cluster plan sit: N GPUs, G to a node, each
// pipeline stage a tensor-parallel group of T GPUs (with context parallelism
// C such groups, T x C GPUs a stage), K stages to a pipeline, D pipelines
// (data-parallel replicas), T x C x K x D = N. GPUs are numbered
// node after node. The layout, Megatron-LM's order with the pipeline inside
// the replica:
//   gpu(d, k, t) = (d K + k) T + t
// so that
//   - a TP group (its T GPUs) lies inside one node: T must divide G;
//   - a replica's consecutive stages share a node while they fit (K T GPUs
//     a replica, G a node);
//   - the same stage of every replica, with the same TP rank, forms a DP
//     group (D GPUs, K T apart).
// A stage boundary whose two stages sit on different nodes crosses the
// inter-node link; one inside a node uses the device's own (NVLink).
#pragma once

#include <string>
#include <vector>

namespace gpipe::plan {

struct ClusterShape {
  int gpus = 1;           // N
  int gpus_per_node = 1;  // G
};

struct Parallelism {
  int tensor = 1;    // T: a stage's tensor-parallel group
  int pipeline = 1;  // K: stages per pipeline
  int data = 1;      // D: pipelines
  // C: a stage's context-parallel groups' size (models/context_parallel.hpp):
  // a stage is T x C GPUs, T of them a node's, C such groups side by side.
  int context = 1;
  [[nodiscard]] int stage_gpus() const { return tensor * context; }
};

class ClusterPlacement {
 public:
  // InputError naming the flags: T x C x K x D != N, T not dividing G, a
  // stage's T x C GPUs neither dividing G nor whole nodes, any count below 1.
  ClusterPlacement(const ClusterShape& cluster, const Parallelism& parallelism);

  [[nodiscard]] const ClusterShape& cluster() const { return cluster_; }
  [[nodiscard]] const Parallelism& parallelism() const { return parallelism_; }
  // The GPU of a stage's `tp_rank`-th of its T x C (T fastest).
  [[nodiscard]] int gpu(int replica, int stage, int tp_rank) const;
  [[nodiscard]] int node_of(int gpu) const { return gpu / cluster_.gpus_per_node; }
  // Whether the boundary between stage k and k+1 crosses nodes (the same in every replica).
  [[nodiscard]] bool boundary_crosses_nodes(int stage) const;
  // The GPUs of stage k's DP group for TP rank t, and how many nodes it spans.
  [[nodiscard]] std::vector<int> data_parallel_group(int stage, int tp_rank) const;
  [[nodiscard]] int nodes_spanned_by_data_parallel_group() const;
  // "64 GPUs, 8 nodes of 8: TP 2 inside a node, 4 stages to a pipeline (1 node each), 8 pipelines;
  //  stage boundaries inside a node: 3 of 3; DP groups span 8 nodes", for gpipe-sim run and plan.
  [[nodiscard]] std::string describe() const;

 private:
  ClusterShape cluster_;
  Parallelism parallelism_;
};

}  // namespace gpipe::plan
