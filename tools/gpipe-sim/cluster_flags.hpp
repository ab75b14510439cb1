// gpipe-sim's flags for a pipeline on a cluster (run and sweep): the
// tensor- and context-parallel groups each stage is (the profile's, checked), the
// data-parallel replicas and ZeRO, and where the GPUs sit (plan/cluster.hpp):
// nodes of G GPUs joined by an inter-node link.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "plan/plan.hpp"
#include "sim/scenario.hpp"

namespace gpipe::tools {

struct ClusterFlags {
  std::optional<int> tensor_parallel;
  bool sequence_parallel = false;
  std::optional<int> context_parallel;     // C (models/context_parallel.hpp), the profile's (checked)
  std::string context_form = "all-gather";  // with --model: how the group shares keys and values
  int data_parallel = 1;
  int zero = 0;
  std::optional<int> gpus;
  std::optional<int> gpus_per_node;
  std::optional<double> inter_node_bandwidth_GBps;
  std::optional<double> inter_node_latency_us;
  // A cluster preset (plan/clusters.json, or --cluster-file's): the GPUs a
  // node and the inter-node link where the flags above do not give them.
  std::string cluster;
  std::string cluster_file;
  bool no_scatter_gather = false;  // Megatron's scatter/gather of P2P between nodes off
  bool reduce_after_backward = false;  // plan::PlanRequest::reduce_after_backward
  bool fp32_main_grads = false;        // plan::PlanRequest::fp32_main_grads
  bool overlap_param_gather = false;   // plan::PlanRequest::overlap_param_gather
  bool tp_comm_overlap = false;        // with --model: profiles::AnalyticOptions::tp_comm_overlap

  void add_to(CLI::App& cmd);
  // Sets the request's replicas and ZeRO stage and the conditions' group
  // and cluster (a cluster when any of --gpus, --gpus-per-node, the
  // inter-node link or --cluster is given). InputError for an unknown
  // cluster or a bad --cluster-file.
  void apply_to(plan::PlanRequest& request, sim::Conditions& conditions) const;
  // Whether any of these flags was given (`cmd`): an inference stream refuses them.
  [[nodiscard]] static bool any_given(const CLI::App& cmd);
};

}  // namespace gpipe::tools
