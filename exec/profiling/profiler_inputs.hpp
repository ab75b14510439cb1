// What the CPU profiler (exec/cpu/profiler.cpp) and the CUDA profiler
// (exec/cuda/profiler/layer_profiler.cpp) share on the host: the checks of the
// requested micro-batch sizes and of the passes' counts, the data a pass
// starts from (the first layer's input and the loss layer's target, per size:
// the run's own), the gradient the backward pass starts from and the seed of
// its generator, the bytes a pass records per layer, and the median kept of
// the timed passes. One copy, so both backends draw the same
// numbers from the same seed and refuse the same arguments with the same words.
// Plain exec::Tensors, no CUDA: all of it is tested in CI.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "exec/runtime/tensor.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec {

// The sizes sorted; InputError naming --micro-batch-sizes when empty, when
// one is below 1 or when one is given twice.
[[nodiscard]] std::vector<int> checked_micro_batch_sizes(std::span<const int> sizes);

// InputError naming --warmup when `warmup` < 0, --repeats when `repeats` < 1.
void check_pass_counts(int warmup, int repeats);

// The data of one micro-batch size: the first layer's input and a target for
// every loss layer.
struct SizeInputs {
  int micro_batch_size = 0;
  Tensor input;                 // the first layer's: token ids (i32) or f32
  std::vector<Tensor> targets;  // per layer; empty but for a loss layer
};

// The run's own data at size b: the synthetic task's mini-batch of step 0
// and `seed` (exec/runtime/synthetic_data.hpp), its inputs for the first layer
// and its targets for the loss layer. Not random values of the same shapes:
// some kernels' speed depends on the values (how peaked attention's scores
// are, where an exponential underflows), and Llama blocks profiled on random
// token ids ran 2 to 4 % slower than on the run's sequences.
// With context parallelism (a model split by models::split_context_parallel),
// member `context_member`'s tokens of them (models::context_positions).
[[nodiscard]] SizeInputs training_size_inputs(const models::Model& model, int micro_batch_size, std::uint64_t seed,
                                              int context_member = 0);

// The gradient of the last layer's output: 1/b per sample for a loss layer's
// per-sample output [b] (the mean over the micro-batch), small N(0, 0.01)
// values of `output_shape` otherwise.
[[nodiscard]] Tensor output_gradient(const std::vector<std::int64_t>& output_shape, const models::Layer& last,
                                     int micro_batch_size, std::mt19937_64& rng);

// The generator of the output gradients (output_gradient) of a profile whose
// weights and inputs come from `seed`: seeded apart from them, the same on
// every backend.
[[nodiscard]] std::mt19937_64 output_gradient_generator(std::uint64_t seed);

// The bytes one layer's forward showed at micro-batch size b: at the first
// pass they are written into `sample` (with b); at a later pass the stash must
// hold what it held then, else RunError naming the layer, the two byte counts
// and b (a layer whose stash changes size has no single profile figure).
void record_sample_bytes(profiles::ProfileSample& sample, bool first_pass, const models::Layer& layer,
                         int micro_batch_size, std::int64_t input_bytes, std::int64_t output_bytes,
                         std::int64_t activation_bytes);

// The bytes one layer's I left for its W at micro-batch size b, written into
// `sample` at the first pass and checked at later ones as above.
void record_weight_stash_bytes(profiles::ProfileSample& sample, bool first_pass, const models::Layer& layer,
                               int micro_batch_size, std::int64_t weight_grad_stash_bytes);

// The median of `values` (not empty, else std::invalid_argument): the middle
// one, or the mean of the two middle ones.
[[nodiscard]] double median(std::vector<double> values);

}  // namespace gpipe::exec
