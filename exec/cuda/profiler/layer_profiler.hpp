// The CUDA profiler behind `gpipe-run profile --backend cuda`: the cost of
// every layer of a model at each requested micro-batch size, timed on the GPU
// by CUPTI in the SM partition a K-stage run gives each stage, written as a
// profile (docs/profiles.md; source "cupti", dtype "fp32", the device's name) that the
// simulator reads like any other.
//
// It mirrors the CPU profiler (exec/cpu/profiler.hpp): the layers are built as
// the executor builds them (make_device_layer on the partition's stream, fp32),
// and the whole model runs as a one-stage pipeline runs a micro-batch: every
// forward in model order from a seeded random input uploaded before timing,
// every backward in reverse, then each layer's optimizer step. `warmup`
// untimed passes, then `repeats` timed ones, each going round all the sizes.
// Each forward, backward and step of a timed pass runs under its own CUPTI
// external id; its time is the span of its kernels and copies on the GPU
// (exec/cuda/profiler/layer_timings.hpp), so the host never waits between
// calls, and fwd_us, bwd_us and optimizer_us are the medians. Where a layer's
// kernels are shorter than their launches, the span includes the GPU's waits
// for the host between them, as it does in a run.
//
// dtype is "fp32", the project's name (models::to_string): gpipe-sim derives
// the static memory from it and knows no other spelling. The profile's
// header and its layers' entries are assembled as the CPU's are
// (exec/profiling/profile_assembly.hpp).
//
// Bytes are measured as on the CPU: input_bytes and output_bytes the device
// tensors' sizes, activation_bytes what the layer's stash account holds after
// its forward. The link is measured between two partitions' streams
// (exec/cuda/profiler/link_probe.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "exec/cuda/base/green_context.hpp"
#include "exec/cuda/profiler/link_probe.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cuda::profiler {

struct CudaProfilerOptions {
  int warmup = 2;   // untimed passes over every size
  int repeats = 5;  // timed passes; the medians are kept
  std::uint64_t seed = 1;  // weights (as cpu::make_layer) and the random inputs
  OptimizerConfig optimizer;  // whose step optimizer_us times (AdamW by default)
  int stages = 1;        // the run's K: the layers run in the partition one of K stages gets
  int sm_per_stage = 0;  // its size (0: the even split), as --sm-per-stage
  int device = 0;
  LinkProbeOptions link;
  // K > 1: the other partitions run the same passes, untimed, while partition
  // 0 is timed, as the stages of a pipeline compute at once (layer_profiler.cpp).
  bool load_other_partitions = true;
  // One line of what the profile did, e.g. how many partitions carried the load.
  std::function<void(const std::string&)> on_note;
  // Once the partitions exist (green contexts or why not), before any timing.
  std::function<void(const SmPartitions&)> on_partitions;
  // Progress, as ProfilerOptions: after each pass, then once per finished layer.
  std::function<void(int pass, int passes)> on_pass;
  std::function<void(int layer, int layers, const profiles::LayerProfile&)> on_layer;
};

// InputError when the sizes are empty, hold a size < 1 or a duplicate, when
// warmup < 0, repeats < 1 or stages < 1 (checked before the device is
// touched), or when the SM split does not fit the device; RunError "no CUDA
// device: ..." without a GPU, and when CUPTI's records are incomplete.
[[nodiscard]] profiles::Profile profile_cuda(const models::Model& model, std::span<const int> micro_batch_sizes,
                                             const CudaProfilerOptions& options = {});

}  // namespace gpipe::exec::cuda::profiler
