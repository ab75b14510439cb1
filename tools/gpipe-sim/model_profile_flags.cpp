#include "tools/gpipe-sim/model_profile_flags.hpp"

#include <set>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "plan/cluster_presets.hpp"
#include "plan/microbatches.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "profiles/kernel_model.hpp"

namespace gpipe::tools {

void ModelProfileFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--model", model,
                 "Instead of --profile: a model spec or preset (as gpipe-sim profile takes), priced analytically "
                 "in memory on --device, split over --tensor-parallel");
  cmd.add_option("--device", device,
                 fmt::format("With --model: the device, one of {} (default: --cluster's)", profiles::device_keys()));
  cmd.add_option("--dtype", dtype, "With --model: the dtype, bf16, fp32 or fp8")->capture_default_str();
  cmd.add_option("--kernel-file", kernel_file, "With --model: a kernel model of one's own (profiles/data/kernels/)");
}

profiles::Profile ModelProfileFlags::make(const sim::Scenario& scenario, const ClusterFlags& cluster,
                                          const CLI::App& cmd) const {
  if (cmd.count("--profile") > 0) throw InputError("give --profile or --model, not both");
  std::string key = device;
  if (key.empty()) {
    const auto preset = plan::cluster_from_flags(cluster.cluster, cluster.cluster_file);
    if (!preset) throw InputError("--model: give --device, or --cluster (which names its device)");
    key = preset->device;
  }
  const profiles::Device d = profiles::device_named(key);
  const auto type = models::parse_dtype(dtype);
  if (!type) throw InputError(fmt::format("--dtype: unknown dtype '{}' (known: {})", dtype, models::dtype_names()));
  models::Model m = models::parse_model(model);
  const int t = cluster.tensor_parallel.value_or(1);
  if (t > 1) m = models::split_tensor_parallel(m, {.degree = t, .sequence_parallel = cluster.sequence_parallel});
  const int c = cluster.context_parallel.value_or(1);
  m = models::split_context_parallel(
      m, {.degree = c, .form = models::parse_context_parallel_form(cluster.context_form).value()});
  const plan::PlanRequest& r = scenario.request;
  const std::vector<int> split = plan::microbatch_sizes(r.microbatches, r.batch, r.micro_batch_size);
  const std::set<int> distinct(split.begin(), split.end());
  const std::vector<int> sizes(distinct.begin(), distinct.end());
  profiles::AnalyticOptions options;
  if (!kernel_file.empty()) options.kernels = profiles::load_kernel_model(kernel_file);
  options.tp_comm_overlap = cluster.tp_comm_overlap;
  // A context group wider than a node shares keys and values over the network.
  sim::Conditions placed;
  plan::PlanRequest unused;
  cluster.apply_to(unused, placed);
  if (c > 1 && placed.cluster && t * c > placed.cluster->gpus_per_node) {
    options.context_link = placed.cluster->inter_node;
  }
  return profiles::analytic_profile(m, d, *type, sizes, options);
}

std::string ModelProfileFlags::describe(const profiles::Profile& profile) const {
  return fmt::format("{} (made in memory)", profile.model);
}

}  // namespace gpipe::tools
