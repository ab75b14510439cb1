// Argument checks shared by the layer kinds: a tensor of the wrong type or
// shape is bad input (InputError naming the layer and the tensor), a stash
// that a forward of this kind did not fill is a bug of the caller
// (std::logic_error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "exec/cpu/layer.hpp"

namespace gpipe::exec::cpu {

// In an expected shape: any micro-batch size >= 1.
inline constexpr std::int64_t kAnyBatch = -1;

// Checks `tensor` against `type` and `shape` and returns its first dimension.
std::int64_t expect_tensor(const models::Layer& layer, std::string_view what, const Tensor& tensor,
                           ElementType type, const std::vector<std::int64_t>& shape);

// The target a loss layer needs, or InputError when there is none.
const Tensor& expect_target(const models::Layer& layer, const Tensor* target);

void expect_stash(const models::Layer& layer, const Stash& stash, std::size_t count);

}  // namespace gpipe::exec::cpu
