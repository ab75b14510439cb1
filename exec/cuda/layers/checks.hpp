// Argument checks of the CUDA layer kinds, the twins of exec/cpu/checks.hpp
// with the same messages: a device tensor of the wrong type or shape is bad
// input (InputError naming the layer and the tensor), a stash that a forward
// of this kind did not fill is a bug of the caller (std::logic_error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "exec/cuda/layer.hpp"

namespace gpipe::exec::cuda::layers {

// In an expected shape: any micro-batch size >= 1.
inline constexpr std::int64_t kAnyBatch = -1;

// Checks `tensor` against `type` and `shape` and returns its first dimension.
std::int64_t expect_tensor(const models::Layer& layer, std::string_view what,
                           const DeviceTensor& tensor, DeviceType type,
                           const std::vector<std::int64_t>& shape);

// The target a loss layer needs, or InputError when there is none.
[[nodiscard]] const DeviceTensor& expect_target(const models::Layer& layer,
                                                const DeviceTensor* target);

void expect_stash(const models::Layer& layer, const DeviceStash& stash, std::size_t count);

// The context's allocator, BLAS handle and stream, or std::logic_error naming the missing one.
void expect_context(const models::Layer& layer, const LayerContext& context);

}  // namespace gpipe::exec::cuda::layers
