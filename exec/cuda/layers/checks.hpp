// Argument checks of the CUDA layer kinds: those of exec/layers/layer_checks.hpp,
// which the CPU layers share, and the one only a device layer needs, that its
// context is complete.
#pragma once


#include "exec/cuda/layers/layer.hpp"
#include "exec/layers/layer_checks.hpp"

namespace gpipe::exec::cuda::layers {

// The context's allocator, BLAS handle and stream, or std::logic_error naming the missing one.
void expect_context(const models::Layer& layer, const LayerContext& context);

}  // namespace gpipe::exec::cuda::layers
