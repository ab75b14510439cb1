#include "profiles/analytic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "profiles/collectives.hpp"

namespace gpipe::profiles {
namespace {

void require(bool ok, std::string_view option, std::string_view expected, double value) {
  if (!ok) {
    throw InputError(
        fmt::format("analytic option {}: expected {}, got {}", option, expected, value));
  }
}

// The roofline of one pass: whichever of compute and memory traffic takes longer.
double pass_us(double flops, double bytes, double peak_flops_per_s, double bytes_per_s,
               const AnalyticOptions& options) {
  return std::max(flops / peak_flops_per_s, bytes / bytes_per_s) * 1e6 + options.launch_overhead_us;
}

// bytes_at() multiplies per-sample counts by b in int64; refuse a b for which
// that would overflow rather than write a wrapped size.
void check_no_overflow(const models::Layer& layer, int b, models::DType dtype) {
  if (b < 1) return;  // bytes_at() names that error
  const std::int64_t e = models::bytes_per_element(dtype);
  const std::int64_t per_sample =
      std::max({layer.input_elems * e + layer.input_index_bytes, layer.output_elems * e,
                layer.activation_elems * e + layer.activation_fixed_bytes});
  if (per_sample > std::numeric_limits<std::int64_t>::max() / b) {
    throw InputError(fmt::format(
        "layer '{}': micro-batch size {} is too large, its byte counts overflow", layer.name, b));
  }
}

}  // namespace

double memory_efficiency(const Device& device, const AnalyticOptions& options) {
  if (options.mfu) return options.bw_efficiency.value_or(kRooflineBwEfficiency);
  return kernel_model_of(device, options).memory_efficiency;
}

void validate(const AnalyticOptions& o) {
  if (o.mfu) require(std::isfinite(*o.mfu) && *o.mfu > 0 && *o.mfu <= 1, "mfu", "a number in (0, 1]", *o.mfu);
  if (o.bw_efficiency) {
    require(std::isfinite(*o.bw_efficiency) && *o.bw_efficiency > 0 && *o.bw_efficiency <= 1, "bw_efficiency",
            "a number in (0, 1]", *o.bw_efficiency);
  }
  require(std::isfinite(o.launch_overhead_us) && o.launch_overhead_us >= 0, "launch_overhead_us",
          "a non-negative number", o.launch_overhead_us);
  require(std::isfinite(o.optimizer_bytes_per_param) && o.optimizer_bytes_per_param >= 0,
          "optimizer_bytes_per_param", "a non-negative number", o.optimizer_bytes_per_param);
  require(std::isfinite(o.link_latency_us) && o.link_latency_us >= 0, "link_latency_us",
          "a non-negative number", o.link_latency_us);
}

namespace {

// --mfu's flat roofline: each pass max(FLOPs at mfu of the peak, its bytes).
PassTimes roofline_pass_times(const models::Layer& layer, const Device& device, models::DType dtype,
                              int micro_batch_size, const AnalyticOptions& options) {
  const models::LayerBytes bytes = models::bytes_at(layer, micro_batch_size, dtype);
  const double b = micro_batch_size;
  const double e = models::bytes_per_element(dtype);
  const double weights = static_cast<double>(models::param_bytes(layer, dtype));
  const double stash = static_cast<double>(bytes.activation_bytes);
  const double grad_out = static_cast<double>(bytes.output_bytes);
  const double grad_in = b * static_cast<double>(layer.input_elems) * e;
  const double peak = peak_flops(device, dtype) * *options.mfu;
  const double bw = hbm_bytes_per_s(device) * options.bw_efficiency.value_or(kRooflineBwEfficiency);

  PassTimes times;
  times.fwd_us = pass_us(b * layer.fwd_flops, weights + stash + grad_out, peak, bw, options);
  if (layer.input_elems > 0) {
    times.bwd_input_us =
        pass_us(b * layer.bwd_input_flops, weights + stash + grad_out + grad_in, peak, bw, options);
  }
  if (layer.params > 0) {
    times.bwd_weight_us =
        pass_us(b * layer.bwd_weight_flops, 2 * weights + stash + grad_out, peak, bw, options);
  }
  return times;
}

// The kernel model: each pass the sum of its kernels' times, and one launch
// a pass that runs anything, as the roofline's.
PassTimes kernel_pass_times(const models::Model& model, const models::Layer& layer, const KernelModel& kernels,
                            const Device& device, models::DType dtype, int micro_batch_size,
                            double launch_overhead_us) {
  PassTimes times;
  bool has[3] = {false, false, false};
  for (const models::Kernel& k : models::layer_kernels(model, layer, micro_batch_size, dtype)) {
    const double us = kernel_us(k, kernels, device, dtype);
    switch (k.pass) {
      case models::KernelPass::forward: times.fwd_us += us; break;
      case models::KernelPass::input: times.bwd_input_us += us; break;
      case models::KernelPass::weight: times.bwd_weight_us += us; break;
    }
    has[static_cast<int>(k.pass)] = true;
  }
  if (has[0]) times.fwd_us += launch_overhead_us;
  if (has[1]) times.bwd_input_us += launch_overhead_us;
  if (has[2]) times.bwd_weight_us += launch_overhead_us;
  return times;
}

// One layer at one size, the options checked: the roofline with mfu, else
// the kernels priced by `kernels` (the options' kernel model, found once by
// the caller).
PassTimes pass_times(const models::Model& model, const models::Layer& layer, const Device& device,
                     models::DType dtype, int micro_batch_size, const AnalyticOptions& options,
                     const std::optional<KernelModel>& kernels) {
  check_no_overflow(layer, micro_batch_size, dtype);
  if (micro_batch_size < 1) (void)models::bytes_at(layer, micro_batch_size, dtype);  // names the error
  if (options.mfu) return roofline_pass_times(layer, device, dtype, micro_batch_size, options);
  return kernel_pass_times(model, layer, *kernels, device, dtype, micro_batch_size, options.launch_overhead_us);
}

// The kernel model the options price with; none with mfu (the roofline).
std::optional<KernelModel> priced_by(const Device& device, const AnalyticOptions& options) {
  if (options.mfu) return std::nullopt;
  return kernel_model_of(device, options);
}

}  // namespace

KernelModel kernel_model_of(const Device& device, const AnalyticOptions& options) {
  KernelModel kernels = options.kernels ? *options.kernels : kernel_model_for(device);
  if (options.bw_efficiency) kernels.memory_efficiency = *options.bw_efficiency;
  return kernels;
}

PassTimes analytic_pass_times(const models::Model& model, const models::Layer& layer, const Device& device,
                              models::DType dtype, int micro_batch_size, const AnalyticOptions& options) {
  validate(options);
  return pass_times(model, layer, device, dtype, micro_batch_size, options, priced_by(device, options));
}

PassTimes analytic_collective_times(const models::Model& model, const models::Layer& layer, const Device& device,
                                   models::DType dtype, int micro_batch_size, const AnalyticOptions& options,
                                   std::optional<models::CollectiveGroup> only) {
  validate(options);
  PassTimes times;
  if (layer.collectives.empty()) return times;
  const CollectiveLink tensor_link{.latency_us = options.link_latency_us, .bandwidth_GBps = device.link_GBps};
  const CollectiveLink context_link = options.context_link.value_or(tensor_link);
  const std::int64_t e = models::bytes_per_element(dtype);
  // What the ring's passes take in each pass, to be hidden behind attention,
  // and with tp_comm_overlap what the tensor group's take, behind the GEMMs.
  PassTimes beside;
  PassTimes beside_gemms;
  for (const models::LayerCollective& c : layer.collectives) {
    if (only && c.group != *only) continue;
    const bool context = c.group == models::CollectiveGroup::context;
    const int ranks = context ? model.context_parallel : model.tensor_parallel;
    if (ranks == 1) continue;
    const std::int64_t bytes = c.elems * micro_batch_size * e;
    const double us =
        static_cast<double>(fastest_collective(c.collective, ranks, bytes, context ? context_link : tensor_link).ns) / 1e3;
    PassTimes& into = c.beside_attention ? beside : (!context && options.tp_comm_overlap ? beside_gemms : times);
    switch (c.pass) {
      case models::TensorParallelPass::forward: into.fwd_us += us; break;
      case models::TensorParallelPass::input: into.bwd_input_us += us; break;
      case models::TensorParallelPass::weight: into.bwd_weight_us += us; break;
      case models::TensorParallelPass::split_weight:
        into.bwd_weight_us += us;
        into.split_weight_us += us;
        break;
    }
  }
  if (beside == PassTimes{} && beside_gemms == PassTimes{}) return times;
  // The attention kernels' and the GEMMs' time in each pass: what hides them.
  PassTimes attention;
  PassTimes gemms;
  if (!options.mfu) {
    const KernelModel kernels = kernel_model_of(device, options);
    for (const models::Kernel& k : models::layer_kernels(model, layer, micro_batch_size, dtype)) {
      if (k.kind != models::KernelKind::attention && k.kind != models::KernelKind::gemm) continue;
      PassTimes& into = k.kind == models::KernelKind::attention ? attention : gemms;
      const double us = kernel_us(k, kernels, device, dtype);
      switch (k.pass) {
        case models::KernelPass::forward: into.fwd_us += us; break;
        case models::KernelPass::input: into.bwd_input_us += us; break;
        case models::KernelPass::weight: into.bwd_weight_us += us; break;
      }
    }
  }
  const auto exposed = [](double comm, double hidden_by) { return std::max(0.0, comm - hidden_by); };
  times.fwd_us += exposed(beside.fwd_us, attention.fwd_us) + exposed(beside_gemms.fwd_us, gemms.fwd_us);
  times.bwd_input_us +=
      exposed(beside.bwd_input_us, attention.bwd_input_us) + exposed(beside_gemms.bwd_input_us, gemms.bwd_input_us);
  // A split backward's W gathers again what B still holds (split_weight_us):
  // hidden alike, in proportion.
  const double weight = exposed(beside_gemms.bwd_weight_us, gemms.bwd_weight_us);
  if (beside_gemms.bwd_weight_us > 0) {
    times.split_weight_us += weight * beside_gemms.split_weight_us / beside_gemms.bwd_weight_us;
  }
  times.bwd_weight_us += weight;
  return times;
}

double analytic_optimizer_us(const models::Layer& layer, const Device& device,
                             const AnalyticOptions& options) {
  validate(options);
  if (layer.params == 0) return 0;
  const double bytes = static_cast<double>(layer.params) * options.optimizer_bytes_per_param;
  return bytes / (hbm_bytes_per_s(device) * memory_efficiency(device, options)) * 1e6 +
         options.launch_overhead_us;
}

Profile analytic_profile(const models::Model& model, const Device& device, models::DType dtype,
                         std::span<const int> micro_batch_sizes, const AnalyticOptions& options) {
  validate(options);
  const std::optional<KernelModel> kernels = priced_by(device, options);  // once, not once a layer and size
  if (micro_batch_sizes.empty()) throw InputError("analytic profile: no micro-batch sizes given");
  std::vector<int> sizes(micro_batch_sizes.begin(), micro_batch_sizes.end());
  std::sort(sizes.begin(), sizes.end());
  if (sizes.front() < 1) {
    throw InputError(fmt::format("analytic profile: micro-batch size must be at least 1, got {}",
                                 sizes.front()));
  }
  if (const auto dup = std::adjacent_find(sizes.begin(), sizes.end()); dup != sizes.end()) {
    throw InputError(fmt::format("analytic profile: micro-batch size {} given twice", *dup));
  }

  if (options.tp_comm_overlap && model.tensor_parallel > 1 && !model.sequence_parallel) {
    throw InputError("--tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters with the "
                     "GEMMs (Megatron-LM's); give --sequence-parallel");
  }
  Profile profile;
  profile.device = std::string(device.name);
  profile.device_memory_bytes = device.memory_bytes;
  profile.source = "analytic";
  profile.dtype = std::string(models::to_string(dtype));
  profile.model = model.spec;
  profile.link = Link{.latency_us = options.link_latency_us, .bandwidth_GBps = device.link_GBps};
  profile.tensor_parallel = model.tensor_parallel;
  profile.sequence_parallel = model.sequence_parallel;
  profile.context_parallel = model.context_parallel;
  profile.context_form = model.context_form;
  profile.layers.reserve(model.layers.size());
  for (const models::Layer& layer : model.layers) {
    LayerProfile out;
    out.name = layer.name;
    out.kind = layer.kind;
    out.param_bytes = models::param_bytes(layer, dtype);
    out.tied_bytes = layer.tied_elems * models::bytes_per_element(dtype);
    out.optimizer_us = analytic_optimizer_us(layer, device, options);
    for (const int b : sizes) {
      const PassTimes compute = pass_times(model, layer, device, dtype, b, options, kernels);
      const PassTimes comm = analytic_collective_times(model, layer, device, dtype, b, options);
      const PassTimes t{.fwd_us = compute.fwd_us + comm.fwd_us,
                        .bwd_input_us = compute.bwd_input_us + comm.bwd_input_us,
                        .bwd_weight_us = compute.bwd_weight_us + comm.bwd_weight_us,
                        .split_weight_us = comm.split_weight_us};
      const models::LayerBytes bytes = models::bytes_at(layer, b, dtype);
      out.samples.push_back(ProfileSample{.micro_batch_size = b,
                                          .fwd_us = t.fwd_us,
                                          .bwd_us = t.bwd_input_us + t.bwd_weight_us - t.split_weight_us,
                                          .bwd_input_us = t.bwd_input_us,
                                          .bwd_weight_us = t.bwd_weight_us,
                                          .input_bytes = bytes.input_bytes,
                                          .output_bytes = bytes.output_bytes,
                                          .activation_bytes = bytes.activation_bytes,
                                          .weight_grad_stash_bytes =
                                              models::weight_grad_stash_bytes_at(layer, b, dtype)});
      if (bytes.state_bytes > 0) out.samples.back().state_bytes = bytes.state_bytes;
    }
    profile.layers.push_back(std::move(out));
  }
  return profile;
}

}  // namespace gpipe::profiles
