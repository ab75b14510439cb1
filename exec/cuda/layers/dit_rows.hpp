// DiT's activations between layers are [b, T+1, H]: each sample's T token
// rows, then its conditioning row c. The CPU layers loop over samples to
// reach either part; the CUDA twins copy the parts out into packed
// temporaries ([b, T, H] and [b, H], charged to no account) and join them
// back, two strided copies each way, so every kernel runs on packed rows.
#pragma once

#include <cstdint>

#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/layers/ops.hpp"

namespace gpipe::exec::cuda::layers {

struct DitRows {
  std::int64_t batch = 0;
  std::int64_t tokens = 0;  // T
  std::int64_t hidden = 0;  // H

  [[nodiscard]] std::int64_t sample() const { return (tokens + 1) * hidden; }

  // The token rows of x [b, T+1, H], packed [b, T, H].
  [[nodiscard]] DeviceTensor tokens_of(const LayerContext& context, const float* x) const {
    DeviceTensor out(*context.allocator, {batch, tokens, hidden}, DeviceType::f32);
    copy_rows(out.f32(), tokens * hidden, x, sample(), tokens * hidden, batch,
              context.stream->get());
    return out;
  }

  // The c rows of x [b, T+1, H], packed [b, H].
  [[nodiscard]] DeviceTensor c_of(const LayerContext& context, const float* x) const {
    DeviceTensor out(*context.allocator, {batch, hidden}, DeviceType::f32);
    copy_rows(out.f32(), hidden, x + tokens * hidden, sample(), hidden, batch,
              context.stream->get());
    return out;
  }

  // [b, T+1, H] from packed tokens [b, T, H] and c rows [b, H].
  [[nodiscard]] DeviceTensor join(const LayerContext& context, const float* token_rows,
                                  const float* c_rows) const {
    DeviceTensor out(*context.allocator, {batch, tokens + 1, hidden}, DeviceType::f32);
    copy_rows(out.f32(), sample(), token_rows, tokens * hidden, tokens * hidden, batch,
              context.stream->get());
    copy_rows(out.f32() + tokens * hidden, sample(), c_rows, hidden, hidden, batch,
              context.stream->get());
    return out;
  }
};

}  // namespace gpipe::exec::cuda::layers
