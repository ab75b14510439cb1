// What every kernel launcher shares, kept free of CUDA headers so plain .cpp
// files can include the launchers: the stream type (cudaStream_t is a pointer
// to the opaque CUstream_st), bf16 as its raw 16 bits, and the launch
// geometry, pure host arithmetic that tests/cuda/host checks without a GPU.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

struct CUstream_st;  // the runtime's opaque stream; cudaStream_t is CUstream_st*

namespace gpipe::exec::cuda {

using StreamHandle = CUstream_st*;  // nullptr is the legacy default stream

// A bfloat16 held as its bit pattern (the high half of an fp32); device code
// reinterprets it as __nv_bfloat16, which has the same size and layout.
using Bf16 = std::uint16_t;

namespace kernels {

inline constexpr int kThreads = 256;  // threads per block for elementwise kernels
inline constexpr int kWarp = 32;
inline constexpr int kRowsPerBlock = kThreads / kWarp;  // one warp per row kernels
// Elementwise kernels loop with a grid stride, so the grid need not cover the
// whole range; capping it keeps huge tensors within grid limits.
inline constexpr std::int64_t kMaxBlocks = 65536;

// Sizes come from shapes; a negative one is a caller bug, reported by name.
inline void check_size(const char* what, std::int64_t value) {
  if (value < 0) {
    throw std::invalid_argument(std::string("CUDA kernel: negative ") + what + " " +
                                std::to_string(value));
  }
}

[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Blocks for a grid-stride loop over `count` elements (count > 0).
[[nodiscard]] constexpr unsigned elementwise_blocks(std::int64_t count) {
  const std::int64_t blocks = ceil_div(count, kThreads);
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Blocks when each row gets one warp, kRowsPerBlock rows per block (rows > 0).
[[nodiscard]] constexpr unsigned warp_row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(ceil_div(rows, kRowsPerBlock));
}

// Column reductions (bias and LayerNorm parameter gradients) use blocks of
// kWarp columns x kReduceRows row lanes; one block per kWarp columns.
inline constexpr int kReduceRows = 8;
[[nodiscard]] constexpr unsigned column_blocks(std::int64_t width) {
  return static_cast<unsigned>(ceil_div(width, kWarp));
}

}  // namespace kernels
}  // namespace gpipe::exec::cuda
