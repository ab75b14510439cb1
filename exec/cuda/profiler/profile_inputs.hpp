// The host-side data of the CUDA profiler, drawn as the CPU profiler draws
// it (exec/profiler.cpp): per micro-batch size a seeded random input of the
// first layer and a target for every loss layer, uploaded once before timing;
// and the gradient a backward pass starts from. Plain exec::Tensors, so their
// shapes and bytes are checked in CI without a GPU.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "exec/tensor.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cuda::profiler {

// The sizes sorted; InputError naming --micro-batch-sizes when empty, when
// one is below 1 or when one is given twice.
[[nodiscard]] std::vector<int> checked_micro_batch_sizes(std::span<const int> sizes);

struct SizeInputs {
  int micro_batch_size = 0;
  Tensor input;                 // the first layer's: token ids (i32) or f32
  std::vector<Tensor> targets;  // per layer; empty but for a loss layer
};

// Token ids uniform in [0, vocab) for index inputs, N(0, 1) floats otherwise,
// shaped [b, S, elems/S] for a sequence model, [b, elems] otherwise.
[[nodiscard]] SizeInputs random_size_inputs(const models::Model& model, int micro_batch_size,
                                            std::mt19937_64& rng);

// The gradient of the last layer's output: 1/b per sample for a loss layer's
// per-sample output [b] (the mean over the micro-batch), small N(0, 0.01)
// values of `output_shape` otherwise.
[[nodiscard]] Tensor output_gradient(const std::vector<std::int64_t>& output_shape, const models::Layer& last,
                                     int micro_batch_size, std::mt19937_64& rng);

}  // namespace gpipe::exec::cuda::profiler
