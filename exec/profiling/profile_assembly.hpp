// How the CPU profiler (exec/cpu/profiler.cpp) and the CUDA profiler
// (exec/cuda/profiler/layer_profiler.cpp) put what they measured together as
// a profile: the fields that say what was measured, and each layer's entry
// from the layer as the executor built it (its name, kind, parameter and tied
// bytes) and its samples at every size. One copy, so that the two backends'
// profiles differ only in their timings and the measurements only one of
// them makes (a CPU's contention and link, a GPU's link between partitions).
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "exec/layers/layer.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec {

// A profile of `model` measured on `device` by `source` ("cpu", "cupti"), in
// fp32 (the executor's one dtype, spelt as models::to_string spells it: the
// simulator derives the static memory from it); no layers yet.
[[nodiscard]] profiles::Profile profile_header(const models::Model& model, std::string device, std::string source);

// What a profiler measured at one micro-batch size: a sample per layer, in
// model order (record_sample_bytes wrote its bytes; the caller its times).
template <class S>
concept SizeSamples = requires(const S& size) {
  { size.samples } -> std::convertible_to<const std::vector<profiles::ProfileSample>&>;
};

// Each layer's profile, in model order: its name and kind, the bytes of its
// parameters as held and of its tied matrix (llama's tied=1: a parameter of
// the layer), and its sample at each size in `sizes`' order (ascending). The
// optimizer's time is left to the caller, which alone measured it.
template <class T, SizeSamples S>
[[nodiscard]] std::vector<profiles::LayerProfile> layer_profiles(const std::vector<std::unique_ptr<Layer<T>>>& layers,
                                                                 const std::vector<S>& sizes) {
  std::vector<profiles::LayerProfile> out;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Layer<T>& layer = *layers[i];
    profiles::LayerProfile& lp = out.emplace_back();
    lp.name = layer.spec().name;
    lp.kind = layer.spec().kind;
    for (const Parameter<T>& p : layer.parameters()) lp.param_bytes += p.value.bytes();
    if (const int tied = layer.spec().tied_param; tied >= 0) {
      lp.tied_bytes = layer.parameters()[static_cast<std::size_t>(tied)].value.bytes();
    }
    for (const S& size : sizes) lp.samples.push_back(size.samples[i]);
  }
  return out;
}

}  // namespace gpipe::exec
