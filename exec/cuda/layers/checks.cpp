#include "exec/cuda/layers/checks.hpp"

#include <fmt/format.h>

#include <stdexcept>


namespace gpipe::exec::cuda::layers {

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
