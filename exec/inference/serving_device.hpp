// What a backend supplies to serve a serving run, as a C++20 concept:
// the rank's device that the rank loop (rank_loop.hpp) is instantiated with,
// the backend's side of that seam. The CPU's is in serving_rank.cpp (on the
// rank's compute team), the CUDA backend's in
// exec/cuda/inference/cuda_serving.cpp (on the rank's SM partition). The
// training contract is exec/runtime/training_backend.hpp; this one is apart
// because it speaks of a ServingRequest, which the runtime does not know.
#pragma once

#include <concepts>
#include <cstdint>
#include <utility>
#include <vector>

#include "exec/inference/serving_request.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::inference {

template <class D>
concept ServingDevice =
    requires {
      typename D::Tensor;  // what its stages compute with
    } && std::default_initializable<typename D::Tensor> && std::movable<typename D::Tensor> &&
    requires(D& device, const ServingRequest& request, int first, int end, exec::Tensor host,
             std::vector<std::int64_t> shape, typename D::Tensor x, const typename D::Tensor* target,
             typename D::Tensor& output, const typename D::Tensor& held, int sequences, int b, int sequence) {
      // Layers [first, end) of the request's model, on the rank's thread.
      device.build(request, first, end);
      // Stage 0's samples, a target, on the device (moved in).
      { device.input(std::move(host)) } -> std::convertible_to<typename D::Tensor>;
      // An input of zeros, for the warm-up of a later stage.
      { device.zeros(std::move(shape)) } -> std::convertible_to<typename D::Tensor>;
      // Every layer's forward, keeping nothing; done when it returns, so that
      // the host clock sees its end.
      { device.forward(std::move(x), target) } -> std::convertible_to<typename D::Tensor>;
      // The layers' state for `sequences` sequences at b samples, zeroed (dit's cache=1): its bytes.
      { device.start_sequences(sequences, b) } -> std::convertible_to<std::int64_t>;
      // The forwards that follow serve that sequence.
      device.select_sequence(sequence);
      // An output on the host, for keep_outputs (it may be moved from).
      { device.to_host(output) } -> std::convertible_to<exec::Tensor>;
      // What a rank's memory record counts of an input and an output.
      { held.bytes() } -> std::convertible_to<std::int64_t>;
    };

}  // namespace gpipe::exec::inference
