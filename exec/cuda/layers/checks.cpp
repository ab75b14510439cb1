#include "exec/cuda/layers/checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

#include "schedules/error.hpp"

namespace gpipe::exec::cuda::layers {

std::int64_t expect_tensor(const models::Layer& layer, std::string_view what,
                           const DeviceTensor& tensor, DeviceType type,
                           const std::vector<std::int64_t>& shape) {
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
                                 type_name(type), fmt::join(dims, ",")));
  }
  return tensor.dim(0);
}

const DeviceTensor& expect_target(const models::Layer& layer, const DeviceTensor* target) {
  if (target == nullptr) {
    throw InputError(fmt::format("layer {} ({}): forward needs a target", layer.name, layer.kind));
  }
  return *target;
}

void expect_stash(const models::Layer& layer, const DeviceStash& stash, std::size_t count) {
  if (stash.tensors.size() != count) {
    throw std::logic_error(fmt::format("layer {} ({}): backward got a stash of {} tensors, not {}",
                                       layer.name, layer.kind, stash.tensors.size(), count));
  }
}

void expect_context(const models::Layer& layer, const LayerContext& context) {
  const char* missing = context.allocator == nullptr ? "allocator"
                        : context.blas == nullptr    ? "BLAS handle"
                        : context.stream == nullptr  ? "stream"
                                                     : nullptr;
  if (missing != nullptr) {
    throw std::logic_error(
        fmt::format("layer {} ({}): the layer context has no {}", layer.name, layer.kind, missing));
  }
}

}  // namespace gpipe::exec::cuda::layers
