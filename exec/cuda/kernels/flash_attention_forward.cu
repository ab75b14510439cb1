// Flash attention's forward (see flash_attention.hpp): one block per (sample,
// query head, 8 query rows), a warp per row, keys in tiles of 32 with an
// online softmax, as exec/cpu/ops/flash_attention.cpp computes it per tile:
// m' = max(m, tile max), l' = l e^(m - m') + sum_j e^(s_j - m'),
// acc' = acc e^(m - m') + sum_j e^(s_j - m') v_j; out = acc / l, lse = m + log l.
#include "exec/cuda/kernels/device_math.cuh"
#include "exec/cuda/kernels/flash_tiles.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

template <int kChunks>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(flash::Geometry g, const float* qkv, float* out, float* lse) {
  extern __shared__ float shared[];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t pair = blockIdx.x / g.row_blocks;  // n A + a
  const std::int64_t i0 = (blockIdx.x % g.row_blocks) * kFlashRows;
  const std::int64_t n = pair / g.heads;
  const std::int64_t a = pair % g.heads;
  const std::int64_t kv = a / g.group;
  const std::int64_t i = i0 + warp;  // this warp's query row
  const bool active = i < g.seq;     // the same for the whole warp
  float* k_tile = shared;
  float* v_tile = k_tile + kFlashTile * (g.d + 1);
  float* q_row = v_tile + kFlashTile * (g.d + 1) + warp * g.d;
  const float* sample = qkv + n * g.seq * g.width;
  if (active) flash::stage_row(q_row, sample + i * g.width + a * g.d, g.d, lane);

  // Causal, the block's last row sees keys up to itself; every tile below
  // that holds at least one key each of the block's rows sees (tiles start at
  // multiples of 32, rows at multiples of 8), so m is finite after the first.
  const std::int64_t last = i0 + kFlashRows < g.seq ? i0 + kFlashRows : g.seq;
  const std::int64_t keys = g.causal ? last : g.seq;
  float acc[kChunks] = {};
  float m = -INFINITY;
  float sum = 0.0F;
  for (std::int64_t j0 = 0; j0 < keys; j0 += kFlashTile) {
    __syncthreads();  // the previous tile is read (the first time: q_row is written)
    flash::stage_tile(k_tile, sample + g.k_base + kv * g.d, g.width, j0, g.seq, g.d);
    flash::stage_tile(v_tile, sample + g.v_base + kv * g.d, g.width, j0, g.seq, g.d);
    __syncthreads();
    if (!active) continue;  // a whole warp: it still meets every __syncthreads above
    const std::int64_t j = j0 + lane;
    const bool seen = j < g.seq && (!g.causal || j <= i);
    const float score =
        seen ? g.scale * flash::dot(q_row, k_tile + lane * (g.d + 1), g.d) : -INFINITY;
    const float m_new = fmaxf(m, warp_max(score));
    const float p = seen ? expf(score - m_new) : 0.0F;
    // The first tile's m is -inf: e^-inf scales an accumulator that is still 0.
    const float rescale = m == -INFINITY ? 0.0F : expf(m - m_new);
    sum = sum * rescale + warp_sum(p);
    m = m_new;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[c] *= rescale;
    flash::add_weighted_rows(acc, p, v_tile, g.d, lane);
  }
  if (!active) return;
  flash::store_row(out + (n * g.seq + i) * g.hidden + a * g.d, acc, 1.0F / sum, g.d, lane);
  if (lane == 0) lse[pair * g.seq + i] = m + logf(sum);
}

}  // namespace

void flash_attention_forward(const AttentionShape& shape, const float* qkv, float* out, float* lse,
                             StreamHandle stream) {
  check_flash_shape(shape);
  const std::int64_t blocks = flash_query_blocks(shape);
  if (blocks == 0 || shape.hidden == 0) return;
  const flash::Geometry g = flash::geometry(shape);
  const std::size_t shared = flash_forward_shared_bytes(g.d);
  flash::with_chunks(g.d, [&](auto chunks) {
    constexpr int kChunks = decltype(chunks)::value;
    flash::allow_shared_bytes(flash_forward_kernel<kChunks>, shared);
    flash_forward_kernel<kChunks><<<static_cast<unsigned>(blocks), kThreads, shared, stream>>>(
        g, qkv, out, lse);
    GPIPE_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace gpipe::exec::cuda::kernels
