// Flash attention's backward (see flash_attention.hpp), in three kernels that
// each own what they write, so no gradient needs atomics:
//   D_i = dout_i . out_i, one warp per query row (the softmax backward's row term);
//   dq_i = scale sum_j dS_ij k_j, one warp per query row, keys in tiles of 32;
//   dk_j = scale sum_(a, i) dS_ij q_i and dv_j = sum_(a, i) P_ij dout_i, one
//   warp per key row, queries in tiles of 32, over the group's query heads a
//   in order;
// with P_ij = e^(s_ij - lse_i) rebuilt from the forward's lse, dP_ij =
// dout_i . v_j and dS_ij = P_ij (dP_ij - D_i), as exec/cpu/ops/flash_attention.cpp.
#include "exec/cuda/kernels/device_math.cuh"
#include "exec/cuda/kernels/flash_tiles.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void flash_delta_kernel(flash::Geometry g, std::int64_t rows, const float* out,
                                   const float* dout, float* delta) {
  const std::int64_t r = warp_row();  // (n A + a) S + i
  if (r >= rows) return;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t i = r % g.seq;
  const std::int64_t pair = r / g.seq;
  const std::int64_t at = (pair / g.heads * g.seq + i) * g.hidden + pair % g.heads * g.d;
  float sum = 0.0F;
  for (std::int64_t e = lane; e < g.d; e += kWarp) sum += dout[at + e] * out[at + e];
  sum = warp_sum(sum);
  if (lane == 0) delta[r] = sum;
}

template <int kChunks>
__global__ void __launch_bounds__(kThreads)
    flash_query_grad_kernel(flash::Geometry g, const float* qkv, const float* lse,
                            const float* delta, const float* dout, float* dqkv) {
  extern __shared__ float shared[];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t pair = blockIdx.x / g.row_blocks;  // n A + a
  const std::int64_t i0 = (blockIdx.x % g.row_blocks) * kFlashRows;
  const std::int64_t n = pair / g.heads;
  const std::int64_t a = pair % g.heads;
  const std::int64_t kv = a / g.group;
  const std::int64_t i = i0 + warp;
  const bool active = i < g.seq;
  float* k_tile = shared;
  float* v_tile = k_tile + kFlashTile * (g.d + 1);
  float* rows = v_tile + kFlashTile * (g.d + 1);
  float* q_row = rows + warp * g.d;
  float* dout_row = rows + (kFlashRows + warp) * g.d;
  const float* sample = qkv + n * g.seq * g.width;
  float row_lse = 0.0F;
  float row_delta = 0.0F;
  if (active) {
    flash::stage_row(q_row, sample + i * g.width + a * g.d, g.d, lane);
    flash::stage_row(dout_row, dout + (n * g.seq + i) * g.hidden + a * g.d, g.d, lane);
    row_lse = lse[pair * g.seq + i];
    row_delta = delta[pair * g.seq + i];
  }
  const std::int64_t last = i0 + kFlashRows < g.seq ? i0 + kFlashRows : g.seq;
  const std::int64_t keys = g.causal ? last : g.seq;
  float acc[kChunks] = {};
  for (std::int64_t j0 = 0; j0 < keys; j0 += kFlashTile) {
    __syncthreads();
    flash::stage_tile(k_tile, sample + g.k_base + kv * g.d, g.width, j0, g.seq, g.d);
    flash::stage_tile(v_tile, sample + g.v_base + kv * g.d, g.width, j0, g.seq, g.d);
    __syncthreads();
    if (!active) continue;
    const std::int64_t j = j0 + lane;
    float ds = 0.0F;
    if (j < g.seq && (!g.causal || j <= i)) {
      const float* k = k_tile + lane * (g.d + 1);
      const float p = expf(g.scale * flash::dot(q_row, k, g.d) - row_lse);
      const float dp = flash::dot(dout_row, v_tile + lane * (g.d + 1), g.d);
      ds = p * (dp - row_delta);
    }
    flash::add_weighted_rows(acc, ds, k_tile, g.d, lane);
  }
  if (!active) return;
  flash::store_row(dqkv + (n * g.seq + i) * g.width + a * g.d, acc, g.scale, g.d, lane);
}

template <int kChunks>
__global__ void __launch_bounds__(kThreads)
    flash_key_grad_kernel(flash::Geometry g, const float* qkv, const float* lse,
                          const float* delta, const float* dout, float* dqkv) {
  extern __shared__ float shared[];
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t pair = blockIdx.x / g.row_blocks;  // n G + kv
  const std::int64_t j0 = (blockIdx.x % g.row_blocks) * kFlashRows;
  const std::int64_t n = pair / g.groups;
  const std::int64_t kv = pair % g.groups;
  const std::int64_t j = j0 + warp;  // this warp's key row
  const bool active = j < g.seq;
  float* q_tile = shared;
  float* dout_tile = q_tile + kFlashTile * (g.d + 1);
  float* tile_lse = dout_tile + kFlashTile * (g.d + 1);
  float* tile_delta = tile_lse + kFlashTile;
  float* rows = tile_delta + kFlashTile;
  float* k_row = rows + warp * g.d;
  float* v_row = rows + (kFlashRows + warp) * g.d;
  const float* sample = qkv + n * g.seq * g.width;
  if (active) {
    flash::stage_row(k_row, sample + j * g.width + g.k_base + kv * g.d, g.d, lane);
    flash::stage_row(v_row, sample + j * g.width + g.v_base + kv * g.d, g.d, lane);
  }
  // Causal, the queries before the block's first key see none of its keys.
  const std::int64_t first = g.causal ? j0 : 0;
  float dk[kChunks] = {};
  float dv[kChunks] = {};
  for (std::int64_t a = kv * g.group; a < (kv + 1) * g.group; ++a) {
    const std::int64_t head_rows = (n * g.heads + a) * g.seq;  // (n, a)'s rows of lse and D
    for (std::int64_t i0 = first; i0 < g.seq; i0 += kFlashTile) {
      __syncthreads();  // the previous tile is read (the first time: k_row, v_row are written)
      flash::stage_tile(q_tile, sample + a * g.d, g.width, i0, g.seq, g.d);
      flash::stage_tile(dout_tile, dout + n * g.seq * g.hidden + a * g.d, g.hidden, i0, g.seq,
                        g.d);
      if (static_cast<int>(threadIdx.x) < kFlashTile) {
        const std::int64_t r = i0 + threadIdx.x;
        tile_lse[threadIdx.x] = r < g.seq ? lse[head_rows + r] : 0.0F;
        tile_delta[threadIdx.x] = r < g.seq ? delta[head_rows + r] : 0.0F;
      }
      __syncthreads();
      if (!active) continue;
      const std::int64_t i = i0 + lane;  // lane's query row
      float p = 0.0F;
      float ds = 0.0F;
      if (i < g.seq && (!g.causal || i >= j)) {
        const float* q = q_tile + lane * (g.d + 1);
        p = expf(g.scale * flash::dot(q, k_row, g.d) - tile_lse[lane]);
        const float dp = flash::dot(dout_tile + lane * (g.d + 1), v_row, g.d);
        ds = p * (dp - tile_delta[lane]);
      }
      flash::add_weighted_rows(dv, p, dout_tile, g.d, lane);
      flash::add_weighted_rows(dk, ds, q_tile, g.d, lane);
    }
  }
  if (!active) return;
  float* row = dqkv + (n * g.seq + j) * g.width;
  flash::store_row(row + g.k_base + kv * g.d, dk, g.scale, g.d, lane);
  flash::store_row(row + g.v_base + kv * g.d, dv, 1.0F, g.d, lane);
}

}  // namespace

void flash_attention_backward(const AttentionShape& shape, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv, float* scratch,
                              StreamHandle stream) {
  check_flash_shape(shape);
  const std::int64_t rows = flash_attention_backward_scratch_floats(shape);
  if (rows == 0 || shape.hidden == 0) return;
  const flash::Geometry g = flash::geometry(shape);
  float* delta = scratch;
  flash_delta_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(g, rows, out, dout, delta);
  GPIPE_CUDA_CHECK(cudaGetLastError());
  const std::size_t query_shared = flash_query_grad_shared_bytes(g.d);
  const std::size_t key_shared = flash_key_grad_shared_bytes(g.d);
  const auto query_blocks = static_cast<unsigned>(flash_query_blocks(shape));
  const auto key_blocks = static_cast<unsigned>(flash_key_blocks(shape));
  flash::with_chunks(g.d, [&](auto chunks) {
    constexpr int kChunks = decltype(chunks)::value;
    flash::allow_shared_bytes(flash_query_grad_kernel<kChunks>, query_shared);
    flash_query_grad_kernel<kChunks><<<query_blocks, kThreads, query_shared, stream>>>(
        g, qkv, lse, delta, dout, dqkv);
    GPIPE_CUDA_CHECK(cudaGetLastError());
    flash::allow_shared_bytes(flash_key_grad_kernel<kChunks>, key_shared);
    flash_key_grad_kernel<kChunks><<<key_blocks, kThreads, key_shared, stream>>>(
        g, qkv, lse, delta, dout, dqkv);
    GPIPE_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace gpipe::exec::cuda::kernels
