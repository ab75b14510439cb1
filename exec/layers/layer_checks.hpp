// Argument checks of the layer kinds, shared by both backends (exec/cpu/ and
// exec/cuda/layers/), so that a CPU layer and its CUDA twin refuse the same
// input with the same line: a tensor of the wrong type or shape is bad input
// (InputError naming the layer and the tensor), a stash that a forward of this
// kind did not fill is a bug of the caller (std::logic_error).
//
// Templates over the tensor type (exec::Tensor, cuda::DeviceTensor); the name
// of an element type comes from element_type_name(), found next to its enum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "models/model.hpp"

namespace gpipe::exec {

// In an expected shape: any micro-batch size >= 1.
inline constexpr std::int64_t kAnyBatch = -1;

// Checks `tensor` against `type` and `shape` and returns its first dimension.
template <typename TensorT, typename TypeT>
std::int64_t expect_tensor(const models::Layer& layer, std::string_view what, const TensorT& tensor,
                           TypeT type, const std::vector<std::int64_t>& shape) {
  bool ok = !tensor.empty() && tensor.type() == type && tensor.shape().size() == shape.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i) {
    const std::int64_t d = tensor.shape()[i];
    ok = shape[i] == kAnyBatch ? d >= 1 : d == shape[i];
  }
  if (!ok) {
    std::vector<std::string> dims;
    for (std::int64_t d : shape) dims.push_back(d == kAnyBatch ? "b" : std::to_string(d));
    throw InputError(fmt::format("layer {} ({}): {} is {}, expected {}[{}]", layer.name, layer.kind,
                                 what, tensor.empty() ? std::string("empty") : tensor.describe(),
                                 element_type_name(type), fmt::join(dims, ",")));
  }
  return tensor.dim(0);
}

// The target a loss layer needs, or InputError when there is none.
template <typename TensorT>
const TensorT& expect_target(const models::Layer& layer, const TensorT* target) {
  if (target == nullptr) {
    throw InputError(fmt::format("layer {} ({}): forward needs a target", layer.name, layer.kind));
  }
  return *target;
}

template <typename StashT>
void expect_stash(const models::Layer& layer, const StashT& stash, std::size_t count) {
  if (stash.tensors.size() != count) {
    throw std::logic_error(fmt::format("layer {} ({}): backward got a stash of {} tensors, not {}",
                                       layer.name, layer.kind, stash.tensors.size(), count));
  }
}

template <typename StashT>
void expect_weight_stash(const models::Layer& layer, const StashT& weight_stash, std::size_t count) {
  if (weight_stash.tensors.size() != count) {
    throw std::logic_error(fmt::format(
        "layer {} ({}): the weight backward got a stash of {} tensors, not {}", layer.name,
        layer.kind, weight_stash.tensors.size(), count));
  }
}

}  // namespace gpipe::exec
