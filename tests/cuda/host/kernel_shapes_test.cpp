// The host-side logic of the CUDA kernels and GEMM wrapper, tested without a
// GPU: launch geometry, bf16 rounding, the row-major to column-major GEMM
// mapping and its checks, operand alignment, AdamW's per-step scalars, the
// attention scratch sizes and shape checks (grouped-query heads included),
// the flash kernels' grid, registers and shared memory, and the rotary
// embedding's threads and checks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "exec/cuda/kernels/attention.hpp"
#include "exec/cuda/kernels/bf16.hpp"
#include "exec/cuda/kernels/flash_attention.hpp"
#include "exec/cuda/kernels/gemm.hpp"
#include "exec/cuda/kernels/launch.hpp"
#include "exec/cuda/kernels/optimizer.hpp"
#include "exec/cuda/kernels/rope.hpp"

namespace gpipe::exec::cuda {
namespace {

TEST(CudaLaunch, ElementwiseBlocksCoverTheCountUpToTheCap) {
  EXPECT_EQ(kernels::elementwise_blocks(1), 1U);
  EXPECT_EQ(kernels::elementwise_blocks(256), 1U);
  EXPECT_EQ(kernels::elementwise_blocks(257), 2U);
  EXPECT_EQ(kernels::elementwise_blocks(std::int64_t{1} << 40),
            static_cast<unsigned>(kernels::kMaxBlocks));  // the grid-stride loop does the rest
}

TEST(CudaLaunch, OneWarpPerRowAndOneBlockPer32Columns) {
  EXPECT_EQ(kernels::warp_row_blocks(1), 1U);
  EXPECT_EQ(kernels::warp_row_blocks(8), 1U);
  EXPECT_EQ(kernels::warp_row_blocks(9), 2U);
  EXPECT_EQ(kernels::column_blocks(32), 1U);
  EXPECT_EQ(kernels::column_blocks(33), 2U);
  EXPECT_THROW(kernels::check_size("rows", -1), std::invalid_argument);
  EXPECT_NO_THROW(kernels::check_size("rows", 0));
}

TEST(CudaBf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0F), 0x3F80);
  EXPECT_EQ(to_bf16(-2.0F), 0xC000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(to_bf16(std::bit_cast<float>(0x3F808000U)), 0x3F80);
  // 1 + 3 2^-8 is halfway between two odd/even neighbours: up to the even 0x3F82.
  EXPECT_EQ(to_bf16(std::bit_cast<float>(0x3F818000U)), 0x3F82);
  EXPECT_EQ(to_bf16(std::bit_cast<float>(0x3F808001U)), 0x3F81);  // above half: up
  EXPECT_EQ(to_bf16(std::bit_cast<float>(0x3F807FFFU)), 0x3F80);  // below half: down
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to infinity
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::bit_cast<float>(0x7F800001U)))));  // payload low
  EXPECT_EQ(from_bf16(0x3F80), 1.0F);
  EXPECT_EQ(from_bf16(to_bf16(0.15625F)), 0.15625F);  // exactly representable
}

TEST(CudaGemmLayout, RowMajorIsTheSwappedColumnMajorProduct) {
  // C[2,3] = A[2,4] B[4,3], no transposes, packed.
  const ColumnMajorGemm p = column_major_gemm(Transpose::no, Transpose::no, 2, 3, 4, 4, 3, 3);
  EXPECT_EQ(p.m, 3);
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(p.k, 4);
  // B's memory read column-major is B^T [3,4], used as is.
  EXPECT_EQ(p.first.rows, 3);
  EXPECT_EQ(p.first.cols, 4);
  EXPECT_EQ(p.first.ld, 3);
  EXPECT_FALSE(p.first.transposed);
  // A's memory read column-major is A^T [4,2], used as is.
  EXPECT_EQ(p.second.rows, 4);
  EXPECT_EQ(p.second.cols, 2);
  EXPECT_EQ(p.second.ld, 4);
  EXPECT_FALSE(p.second.transposed);
  EXPECT_EQ(p.out.rows, 3);
  EXPECT_EQ(p.out.cols, 2);
  EXPECT_EQ(p.out.ld, 3);
}

TEST(CudaGemmLayout, TransposedOperandsAreStoredTheOtherWayRound) {
  // C[2,3] = A^T B^T with A stored [4,2] (ld 5) and B stored [3,4] (ld 6), C ld 7.
  const ColumnMajorGemm p = column_major_gemm(Transpose::yes, Transpose::yes, 2, 3, 4, 5, 6, 7);
  EXPECT_EQ(p.first.rows, 4);  // B stored [3,4] row-major = [4,3] column-major
  EXPECT_EQ(p.first.cols, 3);
  EXPECT_EQ(p.first.ld, 6);
  EXPECT_TRUE(p.first.transposed);
  EXPECT_EQ(p.second.rows, 2);  // A stored [4,2] row-major = [2,4] column-major
  EXPECT_EQ(p.second.cols, 4);
  EXPECT_EQ(p.second.ld, 5);
  EXPECT_TRUE(p.second.transposed);
  EXPECT_EQ(p.out.ld, 7);
}

TEST(CudaGemmLayout, RejectsNegativeSizesAndShortLeadingDimensions) {
  EXPECT_THROW((void)column_major_gemm(Transpose::no, Transpose::no, -1, 3, 4, 4, 3, 3),
               std::invalid_argument);
  EXPECT_THROW((void)column_major_gemm(Transpose::no, Transpose::no, 2, 3, 4, 3, 3, 3),
               std::invalid_argument);  // lda 3 < k 4
  EXPECT_THROW((void)column_major_gemm(Transpose::yes, Transpose::no, 2, 3, 4, 1, 3, 3),
               std::invalid_argument);  // A^T stored [4,2]: lda 1 < 2
  EXPECT_THROW((void)column_major_gemm(Transpose::no, Transpose::yes, 2, 3, 4, 4, 3, 3),
               std::invalid_argument);  // B^T stored [3,4]: ldb 3 < 4
  EXPECT_THROW((void)column_major_gemm(Transpose::no, Transpose::no, 2, 3, 4, 4, 3, 2),
               std::invalid_argument);  // ldc 2 < n 3
  EXPECT_NO_THROW((void)column_major_gemm(Transpose::no, Transpose::no, 2, 3, 4, 12, 9, 3));
}

TEST(CudaGemmLayout, OperandAlignmentIsTheLargestCommonPowerOfTwo) {
  EXPECT_EQ(operand_alignment(0x1000, 0), 256U);
  EXPECT_EQ(operand_alignment(0x1004, 0), 4U);  // a head's columns at an odd float offset
  EXPECT_EQ(operand_alignment(0x1040, 0), 64U);
  EXPECT_EQ(operand_alignment(0x1000, 96), 32U);  // the batch stride limits it
  EXPECT_EQ(operand_alignment(0x1002, 0), 2U);
}

TEST(CudaOptimizerScalars, AdamwScalarsAreTheCpuStepsBiasCorrections) {
  const kernels::AdamwHyper hyper{0.01F, 0.9F, 0.999F, 1e-8F, 0.1F};
  const kernels::AdamwScalars first = kernels::adamw_scalars(hyper, 1);
  // Step 1: lr / (1 - 0.9) and sqrt(1 - 0.999), formed in double then rounded.
  EXPECT_EQ(first.step_size, static_cast<float>(0.01F / (1.0 - static_cast<double>(0.9F))));
  EXPECT_EQ(first.sqrt_correction2,
            static_cast<float>(std::sqrt(1.0 - static_cast<double>(0.999F))));
  EXPECT_EQ(first.decay, 1.0F - 0.01F * 0.1F);
  EXPECT_EQ(first.one_minus_beta1, 1.0F - 0.9F);
  EXPECT_EQ(first.one_minus_beta2, 1.0F - 0.999F);
  // Late steps: the corrections go to 1, the step size to lr.
  const kernels::AdamwScalars late = kernels::adamw_scalars(hyper, 100000);
  EXPECT_FLOAT_EQ(late.step_size, 0.01F);
  EXPECT_FLOAT_EQ(late.sqrt_correction2, 1.0F);
}

TEST(CudaAttentionShape, ScratchSizesAndShapeChecks) {
  const cpu::AttentionShape shape{2, 8, 32, 4};
  EXPECT_EQ(kernels::attention_forward_scratch_floats(shape), 4 * 2 * 8 * 32);
  EXPECT_EQ(kernels::attention_backward_scratch_floats(shape), 7 * 2 * 8 * 32 + 2 * 4 * 8 * 8);
  EXPECT_THROW(kernels::check_attention_shape({2, 8, 30, 4}), std::invalid_argument);
  EXPECT_THROW(kernels::check_attention_shape({2, 8, 32, 0}), std::invalid_argument);
  EXPECT_THROW(kernels::check_attention_shape({-1, 8, 32, 4}), std::invalid_argument);
}

TEST(CudaAttentionShape, GroupedQueryHeadsMustDivideTheQueryHeads) {
  // {batch, seq, hidden, heads, kv_heads, causal}
  EXPECT_NO_THROW(kernels::check_attention_shape({2, 8, 32, 4, 2, false}));
  EXPECT_NO_THROW(kernels::check_attention_shape({2, 8, 32, 4, 1, true}));
  EXPECT_NO_THROW(kernels::check_attention_shape({2, 8, 32, 4, 0, true}));  // 0: G = A
  EXPECT_THROW(kernels::check_attention_shape({2, 8, 32, 4, 3, true}), std::invalid_argument);
  EXPECT_THROW(kernels::check_attention_shape({2, 8, 32, 4, -1, true}), std::invalid_argument);
  // k and v are copied to every query head, so the scratch does not shrink with G.
  const cpu::AttentionShape gqa{2, 8, 32, 4, 2, false};
  EXPECT_EQ(kernels::attention_forward_scratch_floats(gqa), 4 * 2 * 8 * 32);
  EXPECT_EQ(kernels::attention_backward_scratch_floats(gqa), 7 * 2 * 8 * 32 + 2 * 4 * 8 * 8);
}

TEST(CudaFlashShape, RegistersPerLaneAreTheHeadWidthInWarpsRoundedUpToAPowerOfTwo) {
  EXPECT_EQ(kernels::flash_chunks(1), 1);
  EXPECT_EQ(kernels::flash_chunks(32), 1);
  EXPECT_EQ(kernels::flash_chunks(33), 2);
  EXPECT_EQ(kernels::flash_chunks(64), 2);
  EXPECT_EQ(kernels::flash_chunks(65), 4);
  EXPECT_EQ(kernels::flash_chunks(72), 4);  // DiT-XL's head
  EXPECT_EQ(kernels::flash_chunks(128), 4);  // Llama's
  EXPECT_EQ(kernels::flash_chunks(129), 8);
  EXPECT_EQ(kernels::flash_chunks(kernels::kFlashMaxHeadDim), 8);
}

TEST(CudaFlashShape, OneBlockPerEightRowsOfEachHead) {
  // b 2, S 37 (5 blocks of 8 rows), A 3 query heads of 16 sharing G 1.
  const cpu::AttentionShape shape{2, 37, 48, 3, 1, true};
  EXPECT_EQ(kernels::flash_query_blocks(shape), 2 * 3 * 5);
  EXPECT_EQ(kernels::flash_key_blocks(shape), 2 * 1 * 5);
  EXPECT_EQ(kernels::flash_attention_backward_scratch_floats(shape), 2 * 3 * 37);  // D per row
  const cpu::AttentionShape exact{1, 16, 8, 2, 0, false};  // G = A, two blocks of 8
  EXPECT_EQ(kernels::flash_query_blocks(exact), 4);
  EXPECT_EQ(kernels::flash_key_blocks(exact), 4);
}

TEST(CudaFlashShape, SharedMemoryIsPaddedTilesAndTheWarpsRows) {
  // d 64: tiles [32][65].
  EXPECT_EQ(kernels::flash_forward_shared_bytes(64), (2 * 32 * 65 + 8 * 64) * 4U);
  EXPECT_EQ(kernels::flash_query_grad_shared_bytes(64), (2 * 32 * 65 + 16 * 64) * 4U);
  EXPECT_EQ(kernels::flash_key_grad_shared_bytes(64), (2 * 32 * 65 + 64 + 16 * 64) * 4U);
  EXPECT_EQ(kernels::flash_forward_shared_bytes(128), 37120U);  // under the 48 KiB default
  // d 256 needs more than the default 48 KiB (the launch asks for it), and
  // stays under Hopper's 227 KiB a block.
  EXPECT_EQ(kernels::flash_forward_shared_bytes(256), 73984U);
  EXPECT_EQ(kernels::flash_key_grad_shared_bytes(256), 82432U);
  for (const std::int64_t d : {std::int64_t{1}, std::int64_t{64}, kernels::kFlashMaxHeadDim}) {
    EXPECT_LE(kernels::flash_key_grad_shared_bytes(d), 227U * 1024U) << d;
    EXPECT_LE(kernels::flash_query_grad_shared_bytes(d), kernels::flash_key_grad_shared_bytes(d));
    EXPECT_LE(kernels::flash_forward_shared_bytes(d), kernels::flash_query_grad_shared_bytes(d));
  }
}

TEST(CudaFlashShape, ChecksAttentionsShapeAndTheWidestHead) {
  EXPECT_NO_THROW(kernels::check_flash_shape({1, 4, 256, 1, 0, true}));  // d 256
  EXPECT_THROW(kernels::check_flash_shape({1, 4, 257, 1, 0, true}), std::invalid_argument);
  EXPECT_THROW(kernels::check_flash_shape({1, 4, 32, 4, 3, true}), std::invalid_argument);
  EXPECT_THROW(kernels::check_flash_shape({1, 4, 30, 4, 0, true}), std::invalid_argument);
}

TEST(CudaRopeShape, OneThreadPerTokenAndPairAndEvenHeads) {
  // q of 3 heads of 8 inside a row of 40 (a packed qkv): 2 x 7 tokens x 4 pairs.
  const kernels::RopeShape q{.batch = 2, .seq = 7, .heads = 3, .head_dim = 8, .row_stride = 40};
  EXPECT_EQ(kernels::rope_threads(q), 2 * 7 * 4);
  EXPECT_NO_THROW(kernels::check_rope_shape(q));
  kernels::RopeShape odd = q;
  odd.head_dim = 7;
  EXPECT_THROW(kernels::check_rope_shape(odd), std::invalid_argument);
  kernels::RopeShape short_row = q;
  short_row.row_stride = 20;  // 3 heads of 8 do not fit
  EXPECT_THROW(kernels::check_rope_shape(short_row), std::invalid_argument);
  kernels::RopeShape negative = q;
  negative.batch = -1;
  EXPECT_THROW(kernels::check_rope_shape(negative), std::invalid_argument);
}

}  // namespace
}  // namespace gpipe::exec::cuda
