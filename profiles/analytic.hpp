// The analytic cost model: a profile (source "analytic") computed from a
// model's kernels and a device's kernel model, with no GPU. Deterministic,
// so that the simulator can be run for hardware that is not at hand. It is an
// estimate; a CUPTI profile replaces it when measured.
//
// Each pass of layer l at micro-batch size b in dtype is the kernels it runs
// (models/layer_kernels.hpp: its GEMMs with their shapes, the attention core,
// the memory-bound kernels), each priced by the device's kernel model
// (profiles/kernel_model.hpp: wave and tile quantization, efficiencies
// fitted or measured, from profiles/data/kernels/), plus one
// launch_overhead_us a pass that runs anything:
//   fwd_us        = sum of the forward kernels' times + launch_overhead_us
//   bwd_input_us  = the input gradient's kernels (0 when the layer has no
//                   floating input: the embedding)
//   bwd_weight_us = the weight gradient's kernels (0 when the layer has no
//                   parameters)
//   bwd_us        = bwd_input_us + bwd_weight_us
//   optimizer_us  = params * optimizer_bytes_per_param / (hbm * memory efficiency) * 1e6
//                   + launch_overhead_us, 0 when the layer has no parameters
//                   (AdamW is memory-bound)
//
// With `mfu` set (gpipe-sim profile --mfu), the flat roofline instead: each pass
//   P     = param_bytes(l, dtype)                       (the weights)
//   In, Out, Act = models::bytes_at(l, b, dtype)         (input, output, stash)
//   dOut  = Out                                          (the output's gradient)
//   dIn   = b * input_elems * e  (the input's gradient; int32 token ids have none)
//   peak  = peak_flops(device, dtype) * mfu
//   bw    = hbm_bytes_per_s(device) * bw_efficiency (default kRooflineBwEfficiency)
//   t(flops, bytes) = max(flops / peak, bytes / bw) * 1e6 + launch_overhead_us
//   fwd_us        = t(b * fwd_flops,        P + Act + Out)
//   bwd_input_us  = t(b * bwd_input_flops,  P + Act + dOut + dIn)
//   bwd_weight_us = t(b * bwd_weight_flops, 2P + Act + dOut)
// bw_efficiency, when set, is the memory efficiency of either form.
// With tensor parallelism (a model split by models::split_tensor_parallel)
// the numbers above are one GPU's, and each pass adds its collectives
// (Layer::collectives), priced by profiles/collectives.hpp (the faster
// algorithm) over the T GPUs of the group on the device's NVLink with
// link_latency_us: on the compute stream, none overlapped. A split
// backward's W adds what it gathers again (TensorParallelPass::split_weight),
// which bwd_us leaves out:
//   bwd_us = bwd_input_us + bwd_weight_us - split_weight_us
// The sample's input/output/activation bytes are bytes_at()'s EXACTLY, and its
// weight_grad_stash_bytes weight_grad_stash_bytes_at()'s (what the CPU
// executor's W keeps), so the simulator's memory matches the executor's
// accounting, split backward included.
#pragma once

#include <optional>
#include <span>

#include "models/model.hpp"
#include "profiles/device.hpp"
#include "profiles/kernel_model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::profiles {

struct AnalyticOptions {
  // Fraction of the peak FLOP rate every pass reaches: set, the flat
  // roofline above replaces the kernel model.
  std::optional<double> mfu;
  // Fraction of the HBM bandwidth memory-bound work reaches; unset, the
  // kernel model's (the roofline's: kRooflineBwEfficiency).
  std::optional<double> bw_efficiency;
  // The kernel model; unset, the device's shipped one (kernel_model_for).
  std::optional<KernelModel> kernels;
  // Fixed cost of each pass (fwd, bwd_input, bwd_weight, optimizer step).
  double launch_overhead_us = 5.0;
  // Bytes AdamW moves per parameter: ~16 bytes of state (ZeRO's mixed-precision
  // count: weight 2, gradient 2, fp32 master weight, momentum, variance 12),
  // each read and written once.
  double optimizer_bytes_per_param = 32.0;
  // The profile's link latency; its bandwidth is the device's NVLink.
  double link_latency_us = 5.0;
  // Each GPU's link in its context-parallel group (models/context_parallel.hpp);
  // unset, the profile's (the group inside a node). A cluster's planner sets
  // the network's where the group spans nodes.
  std::optional<CollectiveLink> context_link;
  // Megatron-LM's --tp-comm-overlap (Transformer Engine's userbuffers): the
  // tensor-parallel group's all-gathers and reduce-scatters of sequence
  // parallelism run beside the GEMMs they feed or follow, so a pass shows only
  // what its GEMMs do not hide (an upper bound on the overlap: TE splits each
  // GEMM in chunks, and the first and last chunk's transfer stay exposed).
  bool tp_comm_overlap = false;
};

// The flat roofline's memory efficiency when --mfu is given alone.
inline constexpr double kRooflineBwEfficiency = 0.8;

// Throws InputError naming the option ("analytic option mfu: ...") unless mfu
// and bw_efficiency are in (0, 1] and the others finite and >= 0.
void validate(const AnalyticOptions& options);

struct PassTimes {
  double fwd_us = 0;
  double bwd_input_us = 0;
  double bwd_weight_us = 0;
  // Of bwd_weight_us, what only a split backward's W spends: the gathers
  // again of what an unsplit backward still holds (0 without tensor parallelism).
  double split_weight_us = 0;

  bool operator==(const PassTimes&) const = default;
};

// The formulas above for one layer of `model` at one micro-batch size.
// InputError when micro_batch_size < 1 or the options are invalid.
[[nodiscard]] PassTimes analytic_pass_times(const models::Model& model, const models::Layer& layer, const Device& device,
                                            models::DType dtype, int micro_batch_size,
                                            const AnalyticOptions& options = {});

// The time the layer's collectives (a layer of `model`) add to each pass at
// micro-batch size b: the tensor-parallel group's over model.tensor_parallel
// GPUs on the device's link, the context-parallel group's over
// model.context_parallel on options.context_link; a collective beside the
// attention (context parallelism's ring) only what the pass's attention
// kernel does not hide, and with options.tp_comm_overlap the tensor group's
// only what the pass's GEMMs do not (with --mfu's roofline, which has no
// kernels, all of it). `only`: one group's alone. All 0 for a layer without any.
[[nodiscard]] PassTimes analytic_collective_times(const models::Model& model, const models::Layer& layer,
                                                  const Device& device, models::DType dtype, int micro_batch_size,
                                                  const AnalyticOptions& options = {},
                                                  std::optional<models::CollectiveGroup> only = std::nullopt);

// The kernel model the options price with on `device`: theirs or the
// device's (kernel_model_for), its memory efficiency bw_efficiency where set.
[[nodiscard]] KernelModel kernel_model_of(const Device& device, const AnalyticOptions& options);

// The memory efficiency the options give on `device`: bw_efficiency, else
// the roofline's with mfu, else the kernel model's.
[[nodiscard]] double memory_efficiency(const Device& device, const AnalyticOptions& options);

// The layer's AdamW step, as above.
[[nodiscard]] double analytic_optimizer_us(const models::Layer& layer, const Device& device,
                                           const AnalyticOptions& options = {});

// The profile of `model` on `device`: source "analytic", device = its full
// name, dtype, model = model.spec, link = {link_latency_us, the device's
// NVLink per direction}, one layer per model layer with a sample (split
// backward included) at every size, sorted; a split model's tensor_parallel,
// sequence_parallel and context_parallel, its passes with their collectives. InputError when the sizes are
// empty, hold a size < 1 or a duplicate, or a size so large that a byte count
// overflows, or the options are invalid.
[[nodiscard]] Profile analytic_profile(const models::Model& model, const Device& device,
                                       models::DType dtype, std::span<const int> micro_batch_sizes,
                                       const AnalyticOptions& options = {});

}  // namespace gpipe::profiles
