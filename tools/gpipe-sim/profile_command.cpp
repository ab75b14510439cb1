// gpipe-sim profile --model SPEC --device KEY [--device-file F] [--dtype bf16|fp32]
//   [--tensor-parallel T [--sequence-parallel]] --micro-batch-sizes LIST --out P.json:
//   the analytic profile of the model (one GPU's of a tensor-parallel group),
//   written as a profile file (docs/profiles.md), with a one-line summary on stdout.
// gpipe-sim profile --from-torch-trace T1.json[,T2.json] --micro-batch-sizes B1[,B2]
//   [--layers REGEX] [--torch-version V] [--model NAME] [--step N] [--no-activation-bytes] --out P.json:
//   the profile of the user's own PyTorch model from its profiler traces
//   (interop/torch_trace_profile.hpp), one trace per micro-batch size.
#include "tools/gpipe-sim/commands.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "interop/kineto_trace.hpp"
#include "interop/torch_trace_profile.hpp"
#include "models/model_spec.hpp"
#include "models/presets.hpp"
#include "models/context_parallel.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/shared_flags.hpp"

namespace gpipe::tools {
namespace {

struct ProfileFlags {
  std::string model;
  std::string device;
  std::string device_file;
  std::string kernel_file;
  std::string dtype = "bf16";
  std::string micro_batch_sizes;
  std::string out;
  models::TensorParallel tensor_parallel;
  int context_parallel = 1;
  std::string context_form = "all-gather";
  std::optional<double> context_bandwidth_GBps;  // the context group's link, where it leaves the node
  profiles::AnalyticOptions options;
  // A profile from PyTorch traces instead.
  std::vector<std::string> torch_traces;
  interop::TorchTraceOptions torch;
};

// 8030261248 as "8,030,261,248".
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

// "8,030,261,248 parameters; forward 140.6 TFLOP per sample", and, for a
// preset the user did not override, what its authors publish.
std::string model_size_line(std::string_view spec, const models::Model& model) {
  double forward = 0;
  for (const models::Layer& layer : model.layers) forward += layer.fwd_flops;
  std::string line = fmt::format("{} parameters; forward {:.4g} GFLOP per sample", grouped(model.params()),
                                 forward / 1e9);
  const models::Preset* preset = models::find_preset(spec);
  if (preset != nullptr) {
    line += fmt::format("\npreset {}: published {} parameters", preset->name,
                        grouped(preset->published_params));
    if (preset->published_forward_macs > 0) {
      line += fmt::format(", forward {:.4g} G multiply-adds ({:.4g} GFLOP)",
                          preset->published_forward_macs / 1e9, 2 * preset->published_forward_macs / 1e9);
    }
    line += fmt::format("; source: {}", preset->source);
  }
  return line + "\n";
}

int run_torch_profile(const ProfileFlags& f) {
  const std::vector<int> sizes = parse_int_list(f.micro_batch_sizes, "--micro-batch-sizes");
  if (sizes.size() != f.torch_traces.size()) {
    throw InputError(fmt::format("--micro-batch-sizes: {} sizes for {} traces: give each trace's micro-batch size, "
                                 "in the same order",
                                 sizes.size(), f.torch_traces.size()));
  }
  std::vector<interop::TorchTrace> traces;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    traces.push_back({interop::read_kineto_trace(f.torch_traces[i]), sizes[i]});
  }
  interop::TorchTraceOptions options = f.torch;
  options.model = f.model;
  // Checked as any profile is read, so that a trace's extreme numbers stop here, not at `run`.
  const profiles::Profile profile =
      profiles::profile_from_json(profiles::to_json(interop::torch_trace_profile(traces, options)), f.out);
  profiles::write_profile(profile, f.out);
  std::vector<std::string> names;
  for (const profiles::LayerProfile& l : profile.layers) names.push_back(l.name);
  std::cout << fmt::format("{}: torch-trace profile of {} on {} ({}), {} layers ({}), micro-batch sizes {}\n", f.out,
                           profile.model, profile.device, profile.dtype, profile.layers.size(), fmt::join(names, ", "),
                           fmt::join(profile.layers.front().micro_batch_sizes(), ","));
  std::cout << "measured from " << profile.measured_from << "\n";
  for (const std::string& line : profile.not_measured) std::cout << "not measured: " << line << "\n";
  return 0;
}

int run_profile(const ProfileFlags& f) {
  if (!f.torch_traces.empty()) return run_torch_profile(f);
  if (f.model.empty() || f.device.empty()) {
    throw InputError("give --model and --device (an analytic profile), or --from-torch-trace (a profile from "
                     "PyTorch profiler traces)");
  }
  const models::Model whole = models::parse_model(f.model);
  const models::Model model = models::split_context_parallel(
      models::split_tensor_parallel(whole, f.tensor_parallel),
      {.degree = f.context_parallel, .form = models::parse_context_parallel_form(f.context_form).value()});
  // A user's table first, so that its rows may stand in for shipped ones.
  std::vector<profiles::Device> table;
  if (!f.device_file.empty()) table = profiles::load_device_file(f.device_file);
  table.insert(table.end(), profiles::known_devices().begin(), profiles::known_devices().end());
  const auto device = profiles::find_device(f.device, table);
  if (!device) {
    throw InputError(fmt::format("--device: unknown device '{}' (known: {})", f.device, profiles::device_keys(table)));
  }
  const auto dtype = models::parse_dtype(f.dtype);
  if (!dtype) {
    throw InputError(
        fmt::format("--dtype: unknown dtype '{}' (known: {})", f.dtype, models::dtype_names()));
  }
  const std::vector<int> sizes = parse_int_list(f.micro_batch_sizes, "--micro-batch-sizes");
  if (sizes.size() > kMaxProfiledSizes) {
    throw InputError(fmt::format("--micro-batch-sizes: {} sizes, more than the {} a profile measures; "
                                 "interpolation fills the sizes between",
                                 sizes.size(), kMaxProfiledSizes));
  }
  profiles::AnalyticOptions options = f.options;
  if (!f.kernel_file.empty()) options.kernels = profiles::load_kernel_model(f.kernel_file);
  if (f.context_bandwidth_GBps) {
    options.context_link = profiles::CollectiveLink{.latency_us = options.link_latency_us,
                                                    .bandwidth_GBps = *f.context_bandwidth_GBps};
  }
  const profiles::Profile profile = profiles::analytic_profile(model, *device, *dtype, sizes, options);
  profiles::write_profile(profile, f.out);
  std::cout << fmt::format(
      "{}: analytic profile of {} on {} ({}), {} layers, micro-batch sizes {}\n", f.out,
      profile.model, profile.device, profile.dtype, profile.layers.size(),
      fmt::join(profile.layers.front().micro_batch_sizes(), ","));
  std::cout << model_size_line(f.model, whole);
  if (options.mfu) {
    std::cout << fmt::format("priced at {} of the peak FLOP rate (--mfu), a flat roofline\n", *options.mfu);
  } else {
    const profiles::KernelModel kernels = profiles::kernel_model_of(*device, options);
    std::cout << fmt::format("priced kernel by kernel: {}'s kernel model ({})\n", kernels.device, kernels.source);
  }
  if (model.tensor_parallel > 1) {
    std::cout << fmt::format("tensor parallel over {} GPUs{}: {} parameters per GPU\n", model.tensor_parallel,
                             model.sequence_parallel ? ", sequence parallel" : "", grouped(model.params()));
  }
  if (model.context_parallel > 1) {
    std::cout << fmt::format("context parallel over {} GPUs ({}): {} tokens of {} per GPU, keys and values on {} GB/s\n",
                             model.context_parallel, models::to_string(model.context_form),
                             model.seq / model.context_parallel, model.seq,
                             options.context_link ? options.context_link->bandwidth_GBps : device->link_GBps);
  }
  return 0;
}

}  // namespace

Subcommand add_profile_command(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Write an analytic profile (roofline from FLOPs, bytes and a device's peak "
      "rates) of a model, for simulating hardware that is not at hand; or, with --from-torch-trace, the "
      "profile of your own PyTorch model from its profiler traces");
  add_model_flag(*cmd, flags->model,
                 " (with --from-torch-trace: the name the profile gives the model, default torch: and its "
                 "outermost module)")
      ->required(false);
  cmd->add_option("--device", flags->device,
                  fmt::format("Device whose datasheet peak rates to use (profiles/devices.json, each row with "
                              "its source): {}; or one of --device-file's",
                              profiles::device_keys()));
  cmd->add_option("--device-file", flags->device_file,
                  "Devices of your own, in the form of profiles/devices.json (key, name, bf16_tflops, "
                  "fp8_tflops, fp32_tflops, memory_GB, memory_TBps, link_GBps, source); they come before the "
                  "shipped ones")
      ->check(nonempty_path());
  cmd->add_option("--dtype", flags->dtype, "Element type: bf16 (tensor cores), fp32 (no TF32), or fp8 (GEMMs at the fp8 rate; weights, "
                  "gradients, activations and messages stored as bf16, fp32 master weights and optimizer state)")
      ->capture_default_str();
  cmd->add_option("--tensor-parallel", flags->tensor_parallel.degree,
                  "GPUs each layer is split over, Megatron-LM's way (transformer and llama families): the profile "
                  "is one GPU's, its passes with the group's collectives on the device's NVLink")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", flags->tensor_parallel.sequence_parallel,
                "Split the norms and the residual stream over the sequence too (with --tensor-parallel 2 or more)");
  cmd->add_flag("--tp-comm-overlap", flags->options.tp_comm_overlap,
                "With --tensor-parallel and --sequence-parallel: the group's all-gathers and reduce-scatters beside "
                "the GEMMs they feed, as Megatron-LM's --tp-comm-overlap; a pass shows only what its GEMMs do not hide");
  cmd->add_option("--context-parallel", flags->context_parallel,
                  "GPUs each sequence is split over, after --tensor-parallel (context parallelism: transformer and "
                  "llama with attn=flash): the profile is one GPU's, with the group's sharing of keys and values")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--context-parallel-form", flags->context_form,
                  "all-gather (Llama 3's: keys and values gathered before attention, exposed) or ring (Megatron-LM's: "
                  "passed around the group beside the attention kernel)")
      ->check(CLI::IsMember({"all-gather", "ring"}))
      ->capture_default_str();
  cmd->add_option("--context-link-gbps", flags->context_bandwidth_GBps,
                  "Each GPU's bandwidth in its context-parallel group, GB/s, one way (default: the device's NVLink; "
                  "give the network's per-GPU share where the group spans nodes)")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--micro-batch-sizes", flags->micro_batch_sizes,
                  "Micro-batch sizes to sample: 1,2,4,8 or 1..8 or 1..4,8,16")
      ->required();
  cmd->add_option("--out", flags->out, "Profile file to write (JSON)")->required()->check(nonempty_path());
  cmd->add_option("--mfu", flags->options.mfu,
                  "Price every pass at this fraction of the peak FLOP rate, in (0, 1], the flat roofline "
                  "(default: the device's kernel model, profiles/data/kernels/)");
  cmd->add_option("--bw-efficiency", flags->options.bw_efficiency,
                  "Fraction of the HBM bandwidth memory-bound work reaches, in (0, 1] (default: the kernel "
                  "model's; 0.8 with --mfu)");
  cmd->add_option("--kernel-file", flags->kernel_file,
                  "A kernel model of your own, in the form of profiles/data/kernels/*.json (default: the device's)")
      ->check(nonempty_path());
  cmd->add_option("--launch-overhead-us", flags->options.launch_overhead_us,
                  "Fixed cost of each layer pass (fwd, bwd_input, bwd_weight, optimizer step)")
      ->capture_default_str();
  cmd->add_option("--link-latency-us", flags->options.link_latency_us,
                  "Link latency written to the profile (its bandwidth is the device's NVLink)")
      ->capture_default_str();
  CLI::Option* torch = cmd->add_option("--from-torch-trace", flags->torch_traces,
                                       "PyTorch profiler traces (Kineto's Chrome JSON from export_chrome_trace) of a "
                                       "few training steps of your model on the CPU, recorded with record_shapes, "
                                       "profile_memory and with_stack: one per micro-batch size, in "
                                       "--micro-batch-sizes' order (docs/torch.md)")
                             ->delimiter(',')
                             ->check(nonempty_path());
  cmd->add_option("--layers", flags->torch.layers,
                  "With --from-torch-trace: a regular expression naming the layers, matched against whole module "
                  "names (Block_0) or record_function labels (default: the model's child modules)")
      ->needs(torch);
  cmd->add_option("--torch-version", flags->torch.torch_version,
                  "With --from-torch-trace: the torch that wrote the traces, for the profile's record (a trace does "
                  "not say)")
      ->needs(torch);
  cmd->add_option("--step", flags->torch.step,
                  "With --from-torch-trace: take the N-th step each trace splits into (1 = the first; split by its "
                  "ProfilerStep#N spans, else by each run of the model's forward, else by each optimizer step) "
                  "instead of the median over them")
      ->check(CLI::Range(1, 1000000))
      ->needs(torch);
  cmd->add_flag("--no-activation-bytes", flags->torch.no_activation_bytes,
                "With --from-torch-trace: traces without memory events; each layer's input bytes stand in for its "
                "activation bytes")
      ->needs(torch);
  for (const char* analytic : {"--device", "--device-file", "--tensor-parallel", "--sequence-parallel", "--mfu",
                               "--bw-efficiency", "--kernel-file", "--launch-overhead-us", "--link-latency-us", "--dtype"}) {
    torch->excludes(cmd->get_option(analytic));
  }
  return {cmd, [flags] { return run_profile(*flags); }};
}

}  // namespace gpipe::tools
