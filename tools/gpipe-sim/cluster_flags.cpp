#include "tools/gpipe-sim/cluster_flags.hpp"

#include <fmt/format.h>

#include "plan/cluster_presets.hpp"

namespace gpipe::tools {

namespace {

constexpr const char* kFlags[] = {"--tensor-parallel", "--sequence-parallel", "--context-parallel",
                                  "--context-parallel-form", "--data-parallel",
                                  "--zero", "--gpus", "--gpus-per-node",
                                  "--inter-node-bandwidth-gbps", "--inter-node-latency-us", "--cluster",
                                  "--cluster-file", "--no-scatter-gather", "--reduce-after-backward",
                                  "--fp32-main-grads", "--overlap-param-gather", "--tp-comm-overlap"};

}  // namespace

void ClusterFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--tensor-parallel", tensor_parallel,
                 "GPUs each stage is split over (tensor parallelism): the profile's, made by gpipe-sim profile "
                 "--tensor-parallel T (checked)")
      ->check(CLI::Range(1, 4096));
  cmd.add_flag("--sequence-parallel", sequence_parallel,
               "The profile's split is sequence parallel too (checked: gpipe-sim profile --sequence-parallel)");
  cmd.add_option("--context-parallel", context_parallel,
                 "GPUs each sequence is split over beside the tensor-parallel group (context parallelism, a stage "
                 "of T x C GPUs): the profile's, made by gpipe-sim profile --context-parallel C (checked); its "
                 "gradients are reduced over D x C")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--context-parallel-form", context_form,
                 "With --model and --context-parallel: all-gather (Llama 3's: the keys and values gathered before "
                 "attention, exposed) or ring (Megatron-LM's: passed around the group beside the attention kernel)")
      ->check(CLI::IsMember({"all-gather", "ring"}))
      ->capture_default_str();
  cmd.add_option("--data-parallel", data_parallel,
                 "Pipeline replicas D: each stage's gradients are reduced over its D copies, starting after its "
                 "last backward, before its step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd.add_option("--zero", zero,
                 "ZeRO stage over the replicas: 1 shards the optimizer state, 2 the gradients too (both "
                 "reduce-scatter, then gather the weights after the step), 3 the weights too (gathered before "
                 "each forward and backward)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd.add_option("--gpus", gpus, "GPUs N of the cluster: T x K x D (default: that product)")
      ->check(CLI::Range(1, 1 << 24));
  cmd.add_option("--gpus-per-node", gpus_per_node,
                 "GPUs G a node: lays the plan out on nodes (TP groups inside one, a replica's stages side by "
                 "side), and rank pairs and data-parallel groups across nodes use the inter-node link "
                 "(default: no nodes, every link the profile's)")
      ->check(CLI::Range(1, 1 << 16));
  cmd.add_option("--inter-node-bandwidth-gbps", inter_node_bandwidth_GBps,
                 "Each GPU's share of the network between nodes, one way, GB/s (default 50: a 400 Gb/s NIC a "
                 "GPU)")
      ->check(CLI::Range(1e-6, 1e6));
  cmd.add_option("--inter-node-latency-us", inter_node_latency_us,
                 "Latency between nodes, us (default 5)")
      ->check(CLI::Range(0.0, 1e6));
  cmd.add_option("--cluster", cluster,
                 fmt::format("A cluster (plan/clusters.json): {}; or one of --cluster-file's. It gives the GPUs a "
                             "node and the network between nodes; a flag of its own beside it wins (the device is "
                             "the profile's)",
                             plan::cluster_keys()));
  cmd.add_option("--cluster-file", cluster_file, "Clusters of your own, in the form of plan/clusters.json");
  cmd.add_flag("--no-scatter-gather", no_scatter_gather,
               "Send each activation between nodes whole from every GPU of a tensor-parallel stage, not in T pieces "
               "gathered again inside the receiving node (Megatron-LM's scatter/gather, its default; without "
               "sequence parallelism only)");
  cmd.add_flag("--reduce-after-backward", reduce_after_backward,
               "With --data-parallel: reduce every stage's gradients after its rank's last backward, as Megatron-LM "
               "without --overlap-grad-reduce (default: each stage's right after its own last backward)");
  cmd.add_flag("--fp32-main-grads", fp32_main_grads,
               "Hold and reduce the gradients in fp32 whatever the dtype (4 bytes a parameter in the static memory, "
               "twice a bf16 reduction's bytes): Megatron-LM's main_grad buffers (--accumulate-allreduce-grads-in-fp32),"
               " Llama 3's fp32 gradient accumulation; with --zero 1, Megatron's distributed optimizer's 6 + 12/D "
               "bytes a parameter");
  cmd.add_flag("--overlap-param-gather", overlap_param_gather,
               "With --zero 1 or 2: gather the updated weights beside the next step's first forward of each stage, "
               "bucket by bucket, as Megatron-LM's --overlap-param-gather (only what outlasts that forward shows; "
               "default: after the step, on the compute stream)");
  cmd.add_flag("--tp-comm-overlap", tp_comm_overlap,
               "With --model, tensor and sequence parallelism: run the tensor-parallel all-gathers and reduce-scatters "
               "beside the GEMMs they feed, as Megatron-LM's --tp-comm-overlap (Transformer Engine's), only what "
               "a pass's GEMMs do not hide showing (default: on the compute stream)");
}

void ClusterFlags::apply_to(plan::PlanRequest& request, sim::Conditions& conditions) const {
  request.data_parallel = data_parallel;
  request.zero = zero;
  request.reduce_after_backward = reduce_after_backward;
  request.fp32_main_grads = fp32_main_grads;
  request.overlap_param_gather = overlap_param_gather;
  conditions.tensor_parallel = tensor_parallel;
  if (sequence_parallel) conditions.sequence_parallel = true;
  conditions.context_parallel = context_parallel;
  const std::optional<plan::ClusterPreset> preset = plan::cluster_from_flags(cluster, cluster_file);
  if (!gpus && !gpus_per_node && !inter_node_bandwidth_GBps && !inter_node_latency_us && !preset) return;
  sim::ClusterConditions placed;
  placed.gpus = gpus;
  if (preset) {
    placed.gpus_per_node = preset->gpus_per_node;
    placed.inter_node = preset->inter_node;
  }
  if (gpus_per_node) placed.gpus_per_node = *gpus_per_node;
  if (inter_node_bandwidth_GBps) placed.inter_node.bandwidth_GBps = *inter_node_bandwidth_GBps;
  if (inter_node_latency_us) placed.inter_node.latency_us = *inter_node_latency_us;
  placed.scatter_gather = !no_scatter_gather;
  conditions.cluster = placed;
}

bool ClusterFlags::any_given(const CLI::App& cmd) {
  for (const char* flag : kFlags) {
    if (cmd.count(flag) > 0) return true;
  }
  return false;
}

}  // namespace gpipe::tools
