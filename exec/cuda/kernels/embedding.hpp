// The embedding layer on the device (models/model.hpp: h[s] = tok[id[s]] +
// pos[s]), the same layouts as exec/cpu/layers/embedding.cpp: ids [b, S] int32,
// tok [V, H], pos [S, H], out [b, S, H]. pos (and dpos) null is llama's
// token_embedding, h[s] = tok[id[s]] (exec/cpu/layers/token_embedding.cpp). The caller checks ids against
// [0, V) on the host, where they come from (the CPU layer throws InputError).
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

struct EmbeddingShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t hidden = 0;
};

void embedding_forward(const EmbeddingShape& shape, const std::int32_t* ids, const float* tok,
                       const float* pos, float* out, StreamHandle stream);

// dtok[id] += dout, dpos[s] += dout (scatter-add with atomics, so the order of
// the additions, and the last bits of repeated ids' sums, may vary run to run).
void embedding_backward(const EmbeddingShape& shape, const std::int32_t* ids, const float* dout,
                        float* dtok, float* dpos, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
