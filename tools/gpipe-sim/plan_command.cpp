// gpipe-sim plan --model SPEC --device KEY --gpus N --gpus-per-node G
//   --global-batch GB: every way to train the model on the cluster
//   (sim/cluster_planner.hpp), the ten fastest that fit printed, every one
//   written to --out as CSV (plots/plan_heatmap.py draws it).
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/files.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "plan/cluster_presets.hpp"
#include "profiles/device.hpp"
#include "schedules/schedule.hpp"
#include "sim/cluster_planner.hpp"
#include "sim/zb_auto.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/name_list.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/progress.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-sim/commands.hpp"
#include "tools/common/shared_flags.hpp"

namespace gpipe::tools {
namespace {

struct PlanFlags {
  std::string model;
  std::string device;
  std::string device_file;
  std::string kernel_file;
  std::string cluster;
  std::string cluster_file;
  std::string dtype = "bf16";
  int gpus = 0;
  std::optional<int> gpus_per_node;  // default: the cluster's, else 8
  std::int64_t global_batch = 0;
  std::string tensor_parallel;  // empty: every divisor of G
  std::string context_parallel = "1";
  std::string context_form = "all-gather";
  std::string pipeline;         // empty: every divisor of N / T
  std::string data_parallel;    // empty: whatever N / (T K) is
  std::string stages_per_rank;  // empty: each schedule's own
  bool no_sequence_parallel = false;
  bool no_scatter_gather = false;
  bool reduce_after_backward = false;
  bool fp32_main_grads = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  std::string micro_batch_sizes = "1,2,4,8";
  std::string schedules = "1f1b,interleaved-1f1b";
  std::string recompute = "never,full";
  std::string zero = "0,1";
  std::optional<double> inter_node_bandwidth_GBps;  // default: the cluster's, else 50
  std::optional<double> inter_node_latency_us;      // default: the cluster's, else 5
  std::string out;
  int top = 10;
};

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

void print_best(const std::vector<sim::ClusterPlanRow>& rows, int top, const profiles::Device& device) {
  // A column for C only where a plan tries context parallelism.
  bool context = false;
  for (const auto& r : rows) context = context || r.context > 1;
  const auto c_column = [context](const std::string& text) { return context ? fmt::format("{:>3} ", text) : std::string(); };
  std::vector<const sim::ClusterPlanRow*> ok;
  std::size_t over = 0, skipped = 0;
  for (const auto& r : rows) {
    if (r.ok()) ok.push_back(&r);
    over += r.status == "over memory" ? 1 : 0;
    skipped += r.status == "skipped" ? 1 : 0;
  }
  std::cout << fmt::format("{} configurations: {} fit, {} over {}'s memory less {} %, {} cannot exist\n\n",
                           rows.size(), ok.size(), over, device.key, profiles::kDeviceMemoryReservePercent, skipped);
  if (ok.empty()) {
    std::cout << "none fits: more GPUs, a smaller global batch, or recompute and ZeRO in the lists\n";
    return;
  }
  std::sort(ok.begin(), ok.end(), [](const auto* a, const auto* b) { return a->tokens_per_s > b->tokens_per_s; });
  std::cout << fmt::format("the {} fastest that fit:\n", std::min<std::size_t>(ok.size(), static_cast<std::size_t>(top)));
  std::cout << fmt::format("{:>3} {}{:>3} {:>4} {:>2} {:>5} {:>3}  {:<17} {:<9} {:>4}  {:>10} {:>10} {:>8} {:>6} {:>10} "
                           "{:>7} {:>6} {:>6}\n",
                           "T", c_column("C"), "K", "D", "V", "M", "b", "schedule", "recompute", "zero", "step", "tokens/s",
                           "TFLOP/s", "MFU", "peak mem", "bubble", "TP", "DP");
  for (std::size_t i = 0; i < ok.size() && i < static_cast<std::size_t>(top); ++i) {
    const auto& r = *ok[i];
    std::cout << fmt::format("{:>3} {}{:>3} {:>4} {:>2} {:>5} {:>3}  {:<17} {:<9} {:>4}  {:>10} {:>10.0f} {:>8.1f} {:>6} "
                             "{:>10} {:>7} {:>6} {:>6}\n",
                             r.tensor, c_column(std::to_string(r.context)), r.pipeline, r.data, r.stages_per_rank, r.microbatches, r.micro_batch_size,
                             r.schedule, sim::to_string(r.recompute), r.zero, format_time_us(r.step_us),
                             r.tokens_per_s, r.tflops_per_gpu, percent(r.mfu), format_bytes(r.peak_memory_bytes),
                             percent(r.bubble_share), percent(r.tensor_parallel_share),
                             percent(r.data_parallel_share));
  }
}

int run_plan(const PlanFlags& f) {
  sim::ClusterPlanRequest r;
  r.model = models::parse_model(f.model);
  // A cluster preset gives the device, the node and the network; a flag given beside it wins.
  const std::optional<plan::ClusterPreset> cluster = plan::cluster_from_flags(f.cluster, f.cluster_file);
  if (f.device.empty() && !cluster) throw InputError("give --device, or --cluster (which names its device)");
  std::vector<profiles::Device> table;
  if (!f.device_file.empty()) table = profiles::load_device_file(f.device_file);
  table.insert(table.end(), profiles::known_devices().begin(), profiles::known_devices().end());
  r.device = profiles::device_named(f.device.empty() ? cluster->device : f.device, table);
  if (!f.kernel_file.empty()) r.analytic.kernels = profiles::load_kernel_model(f.kernel_file);
  const auto dtype = models::parse_dtype(f.dtype);
  if (!dtype) throw InputError(fmt::format("--dtype: unknown dtype '{}' (known: {})", f.dtype, models::dtype_names()));
  r.dtype = *dtype;
  r.gpus = f.gpus;
  r.gpus_per_node = f.gpus_per_node.value_or(cluster ? cluster->gpus_per_node : 8);
  r.global_batch = f.global_batch;
  if (!f.tensor_parallel.empty()) r.tensor_parallel = parse_int_list(f.tensor_parallel, "--tensor-parallel");
  r.context_parallel = parse_int_list(f.context_parallel, "--context-parallel");
  r.context_form = models::parse_context_parallel_form(f.context_form).value();
  if (!f.pipeline.empty()) r.pipeline = parse_int_list(f.pipeline, "--pipeline");
  if (!f.data_parallel.empty()) r.data_parallel = parse_int_list(f.data_parallel, "--data-parallel");
  if (!f.stages_per_rank.empty()) r.stages_per_rank = parse_int_list(f.stages_per_rank, "--stages-per-rank");
  r.sequence_parallel = !f.no_sequence_parallel;
  r.scatter_gather = !f.no_scatter_gather;
  r.reduce_after_backward = f.reduce_after_backward;
  r.fp32_main_grads = f.fp32_main_grads;
  r.overlap_param_gather = f.overlap_param_gather;
  r.analytic.tp_comm_overlap = f.tp_comm_overlap;
  if (f.tp_comm_overlap && f.no_sequence_parallel) {
    throw InputError("--tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters with the "
                     "GEMMs (Megatron-LM's); drop --no-sequence-parallel");
  }
  r.micro_batch_sizes = parse_int_list(f.micro_batch_sizes, "--micro-batch-sizes");
  r.schedules = parse_name_list(f.schedules, "--schedules", sim::predictable_schedule_names());
  if (std::find(r.schedules.begin(), r.schedules.end(), "zb-auto") != r.schedules.end()) {
    throw InputError("--schedules: zb-auto searches schedules itself; name the ones to plan over");
  }
  r.recompute.clear();
  for (const std::string& name : parse_name_list(f.recompute, "--recompute", sim::recompute_choice_names(),
                                                   schedules::accepted_recompute_policy_names())) {
    r.recompute.push_back(*sim::parse_recompute_choice(name));
  }
  r.zero.clear();
  for (const std::string& z : parse_name_list(f.zero, "--zero", {"0", "1", "2", "3"})) r.zero.push_back(std::stoi(z));
  r.inter_node = {.latency_us = f.inter_node_latency_us.value_or(cluster ? cluster->inter_node.latency_us : 5),
                  .bandwidth_GBps =
                      f.inter_node_bandwidth_GBps.value_or(cluster ? cluster->inter_node.bandwidth_GBps : 50)};
  if (!f.out.empty()) check_writable(f.out, "--out");

  std::cout << fmt::format("{} on {} x {} ({} a node), global batch {} x {} tokens\n", r.model.spec, f.gpus,
                           r.device.name, r.gpus_per_node, f.global_batch, std::max(r.model.seq, 1));
  if (cluster) {
    std::cout << fmt::format("cluster {} ({}): {} GB/s a GPU between nodes, {} us\n", cluster->key, cluster->name,
                             r.inter_node.bandwidth_GBps, r.inter_node.latency_us);
  }
  std::optional<Progress> progress;
  const auto show = [&progress](std::size_t done, std::size_t total) {
    if (!progress) {
      progress.emplace(static_cast<std::int64_t>(total), "configurations", std::cerr,
                       Progress::Options{.bar = stderr_is_terminal()});
    }
    progress->update(static_cast<std::int64_t>(done));
  };
  const std::vector<sim::ClusterPlanRow> rows = sim::plan_cluster(r, show);
  if (!f.out.empty()) {
    std::ofstream out = open_for_writing(f.out);
    out << sim::cluster_plan_csv(rows);
    finish_writing(out, f.out);
  }
  print_best(rows, f.top, r.device);
  if (!f.out.empty()) std::cout << "\nevery configuration: " << f.out << "\n";
  return 0;
}

}  // namespace

Subcommand add_plan_command(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Plan a cluster: every tensor-parallel degree T, pipeline depth K and replica count D with T x K x D = N, "
      "over micro-batch sizes, schedules, recompute and ZeRO, each simulated; the fastest that fit printed");
  add_model_flag(*cmd, f->model);
  cmd->add_option("--device", f->device,
                  fmt::format("Device (profiles/devices.json): {}; or one of --device-file's (default: --cluster's)",
                              profiles::device_keys()));
  cmd->add_option("--cluster", f->cluster,
                  fmt::format("A cluster (plan/clusters.json): {}; or one of --cluster-file's. It gives the device, "
                              "the GPUs a node and the network between nodes; a flag of its own beside it wins",
                              plan::cluster_keys()));
  cmd->add_option("--cluster-file", f->cluster_file, "Clusters of your own, in the form of plan/clusters.json")
      ->check(nonempty_path());
  cmd->add_option("--device-file", f->device_file, "Devices of your own, in the form of profiles/devices.json")
      ->check(nonempty_path());
  cmd->add_option("--kernel-file", f->kernel_file,
                  "A kernel model of your own, in the form of profiles/data/kernels/*.json (default: the device's)")
      ->check(nonempty_path());
  cmd->add_option("--dtype", f->dtype, "Element type: bf16, fp32 or fp8")->capture_default_str();
  cmd->add_option("--gpus", f->gpus, "GPUs N in the cluster")->required()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--gpus-per-node", f->gpus_per_node,
                  "GPUs G a node (tensor parallelism stays inside one; default: --cluster's, else 8)")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--global-batch", f->global_batch, "Samples a step over the whole cluster (sequences, for a transformer)")
      ->required()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_option("--tensor-parallel", f->tensor_parallel, "Tensor-parallel degrees to try, e.g. 1,2,4,8 (default: "
                                                           "every divisor of --gpus-per-node)");
  cmd->add_option("--context-parallel", f->context_parallel,
                  "Context-parallel degrees C to try, e.g. 1,2,4: each sequence split over C GPUs beside the T of a "
                  "stage (transformer and llama with attn=flash), T x C x K x D = N")
      ->capture_default_str();
  cmd->add_option("--context-parallel-form", f->context_form,
                  "all-gather (Llama 3's: keys and values gathered before attention, exposed) or ring (Megatron-LM's: "
                  "passed around the group beside the attention kernel)")
      ->check(CLI::IsMember({"all-gather", "ring"}))
      ->capture_default_str();
  cmd->add_option("--pipeline", f->pipeline, "Pipeline depths K to try, e.g. 8,16 (default: every divisor of N / (T C))");
  cmd->add_option("--data-parallel", f->data_parallel,
                  "Replica counts D to keep, e.g. 32,64 (default: whatever N / (T x C x K) is)");
  cmd->add_option("--stages-per-rank", f->stages_per_rank,
                  "Stages a rank V to try with interleaved schedules, e.g. 2,3 (default: each schedule's own)");
  cmd->add_flag("--no-sequence-parallel", f->no_sequence_parallel,
                "Tensor parallelism without sequence parallelism (default: with it, above T = 1)");
  cmd->add_flag("--no-scatter-gather", f->no_scatter_gather,
                "Without sequence parallelism, send each activation between nodes whole from every GPU of a stage, "
                "not in T pieces gathered again inside the receiving node (Megatron-LM's scatter/gather, its default)");
  cmd->add_flag("--reduce-after-backward", f->reduce_after_backward,
                "Reduce every stage's gradients over the replicas after its rank's last backward, as Megatron-LM "
                "without --overlap-grad-reduce (default: each stage's right after its own last backward, under the "
                "rank's later backwards, as torch's runtime does)");
  cmd->add_flag("--overlap-param-gather", f->overlap_param_gather,
                "With ZeRO 1 and 2: gather the updated weights beside the next step's first forward of each stage, as "
                "Megatron-LM's --overlap-param-gather (default: after the step)");
  cmd->add_flag("--tp-comm-overlap", f->tp_comm_overlap,
                "Run the tensor-parallel all-gathers and reduce-scatters beside the GEMMs they feed, as Megatron-LM's "
                "--tp-comm-overlap (Transformer Engine's; needs sequence parallelism): only what a pass's GEMMs do not "
                "hide shows in the step and the TP share");
  cmd->add_flag("--fp32-main-grads", f->fp32_main_grads,
                "Hold and reduce the gradients in fp32 whatever the dtype, as Megatron-LM's main_grad buffers and "
                "Llama 3's fp32 gradient accumulation (with --zero 1: Megatron's distributed optimizer)");
  cmd->add_option("--micro-batch-sizes", f->micro_batch_sizes, "Micro-batch sizes b to try")->capture_default_str();
  cmd->add_option("--schedules", f->schedules,
                  fmt::format("Schedules to try: {}", fmt::join(sim::predictable_schedule_names(), ", ")))
      ->capture_default_str();
  cmd->add_option("--recompute", f->recompute,
                  "Recompute to try: never, stage and stage_except_last (GPipe's stage-wide re-materialization), "
                  "full (Megatron's per-layer checkpoints, one "
                  "block a checkpoint), selective (Korthikanti et al.'s: each block runs its attention core again in "
                  "its backward, the model's recompute=core_attn)")
      ->capture_default_str();
  cmd->add_option("--zero", f->zero, "ZeRO stages to try, 0 to 3")->capture_default_str();
  cmd->add_option("--inter-node-bandwidth-gbps", f->inter_node_bandwidth_GBps,
                  "Each GPU's share of the network between nodes, one way, GB/s (default: --cluster's, else 50)")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--inter-node-latency-us", f->inter_node_latency_us,
                  "Latency between nodes, us (default: --cluster's, else 5)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--out", f->out, "Write every configuration as CSV (plots/plan_heatmap.py draws it)")
      ->check(nonempty_path());
  cmd->add_option("--top", f->top, "How many of the fastest to print")->capture_default_str()->check(CLI::Range(1, 1000));
  return {cmd, [f] { return run_plan(*f); }};
}

}  // namespace gpipe::tools
