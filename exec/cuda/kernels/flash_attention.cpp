// The flash kernels' host-side geometry (flash_attention.hpp): pure
// arithmetic, checked by tests/cuda/host without a GPU.
#include "exec/cuda/kernels/flash_attention.hpp"

#include <limits>
#include <stdexcept>
#include <string>

#include "exec/cuda/kernels/attention.hpp"

namespace gpipe::exec::cuda::kernels {

namespace {

std::size_t float_bytes(std::int64_t floats) {
  return static_cast<std::size_t>(floats) * sizeof(float);
}

std::int64_t row_blocks(const AttentionShape& shape) { return ceil_div(shape.seq, kFlashRows); }

}  // namespace

void check_flash_shape(const AttentionShape& shape) {
  check_attention_shape(shape);
  const std::int64_t d = shape.head_dim();
  if (d > kFlashMaxHeadDim) {
    throw std::invalid_argument("flash attention: head width " + std::to_string(d) +
                                " is over the kernel's " + std::to_string(kFlashMaxHeadDim));
  }
  constexpr std::int64_t kMaxGrid = std::numeric_limits<std::int32_t>::max();
  if (flash_query_blocks(shape) > kMaxGrid) {
    throw std::invalid_argument("flash attention: " + std::to_string(flash_query_blocks(shape)) +
                                " blocks are more than a grid holds");
  }
}

int flash_chunks(std::int64_t head_dim) {
  const std::int64_t chunks = ceil_div(head_dim, kWarp);
  return chunks <= 1 ? 1 : chunks <= 2 ? 2 : chunks <= 4 ? 4 : 8;
}

std::int64_t flash_query_blocks(const AttentionShape& shape) {
  return shape.batch * shape.heads * row_blocks(shape);
}

std::int64_t flash_key_blocks(const AttentionShape& shape) {
  return shape.batch * shape.kv_groups() * row_blocks(shape);
}

std::size_t flash_forward_shared_bytes(std::int64_t head_dim) {
  return float_bytes(2 * kFlashTile * (head_dim + 1) + kFlashRows * head_dim);
}

std::size_t flash_query_grad_shared_bytes(std::int64_t head_dim) {
  return float_bytes(2 * kFlashTile * (head_dim + 1) + 2 * kFlashRows * head_dim);
}

std::size_t flash_key_grad_shared_bytes(std::int64_t head_dim) {
  return float_bytes(2 * kFlashTile * (head_dim + 1) + 2 * kFlashTile + 2 * kFlashRows * head_dim);
}

std::int64_t flash_attention_backward_scratch_floats(const AttentionShape& shape) {
  check_attention_shape(shape);
  return shape.batch * shape.heads * shape.seq;
}

}  // namespace gpipe::exec::cuda::kernels
