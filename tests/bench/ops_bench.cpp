// The CPU backend's elementwise and row kernels, one at a time, at the shapes
// of transformer:layers=4,hidden=256,heads=4,seq=128 with micro-batches of 16
// and of 2 samples: bytes_per_second is the kernel's own traffic
// (its inputs read and outputs written once), so a kernel far below the
// machine's memory bandwidth is compute-bound and a candidate for SIMD.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/attention.hpp"
#include "exec/cpu/ops/cross_entropy.hpp"
#include "exec/cpu/ops/flash_attention.hpp"
#include "exec/cpu/ops/gelu.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/optimizer.hpp"

namespace {

using namespace gpipe::exec;
using namespace gpipe::exec::cpu;

constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kSeq = 128;
constexpr std::int64_t kHeads = 4;
constexpr std::int64_t kVocab = 256;

// Deterministic values in about [-2, 2): no RNG cost inside the timed loop.
std::vector<float> filled(std::int64_t count, float phase = 0.0F) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>((i * 7919 + static_cast<std::size_t>(phase * 97)) % 4001) / 1000.0F - 2.0F;
  }
  return v;
}

// range(0): samples per micro-batch.
std::int64_t rows_of(const benchmark::State& state) { return state.range(0) * kSeq; }

void BM_GeluForward(benchmark::State& state) {
  const std::int64_t count = rows_of(state) * 4 * kHidden;
  const std::vector<float> x = filled(count);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    gelu_forward(count, x.data(), y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * count * 8);
}

void BM_GeluBackward(benchmark::State& state) {
  const std::int64_t count = rows_of(state) * 4 * kHidden;
  const std::vector<float> x = filled(count);
  const std::vector<float> dy = filled(count, 1.0F);
  std::vector<float> dx(x.size());
  for (auto _ : state) {
    gelu_backward(count, x.data(), dy.data(), dx.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * count * 12);
}

void BM_LayerNormForward(benchmark::State& state) {
  const std::int64_t rows = rows_of(state);
  const std::vector<float> x = filled(rows * kHidden);
  const std::vector<float> gamma = filled(kHidden, 2.0F);
  const std::vector<float> beta = filled(kHidden, 3.0F);
  std::vector<float> y(x.size());
  std::vector<float> stats(static_cast<std::size_t>(2 * rows));
  for (auto _ : state) {
    layernorm_forward(rows, kHidden, x.data(), gamma.data(), beta.data(), y.data(), stats.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * kHidden * 8);
}

void BM_LayerNormBackward(benchmark::State& state) {
  const std::int64_t rows = rows_of(state);
  const std::vector<float> x = filled(rows * kHidden);
  const std::vector<float> gamma = filled(kHidden, 2.0F);
  const std::vector<float> beta = filled(kHidden, 3.0F);
  const std::vector<float> dy = filled(rows * kHidden, 1.0F);
  std::vector<float> y(x.size());
  std::vector<float> stats(static_cast<std::size_t>(2 * rows));
  layernorm_forward(rows, kHidden, x.data(), gamma.data(), beta.data(), y.data(), stats.data());
  std::vector<float> dx(x.size());
  std::vector<float> dgamma(kHidden);
  std::vector<float> dbeta(kHidden);
  for (auto _ : state) {
    layernorm_backward(rows, kHidden, x.data(), stats.data(), gamma.data(), dy.data(), dx.data(),
                       dgamma.data(), dbeta.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * kHidden * 12);
}

// The bias gradient is the part of linear_backward_weight outside its GEMM.
void BM_LinearBackwardWeight(benchmark::State& state) {
  const std::int64_t rows = rows_of(state);
  const std::vector<float> x = filled(rows * kHidden);
  const std::vector<float> dy = filled(rows * 4 * kHidden, 1.0F);
  std::vector<float> dw(static_cast<std::size_t>(4 * kHidden * kHidden));
  std::vector<float> dbias(4 * kHidden);
  for (auto _ : state) {
    linear_backward_weight({rows, kHidden, 4 * kHidden}, x.data(), dy.data(), dw.data(), dbias.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 2 * rows * kHidden * 4 * kHidden);  // FLOPs
}

void BM_AttentionForward(benchmark::State& state) {
  const AttentionShape shape{state.range(0), kSeq, kHidden, kHeads};
  const std::vector<float> qkv = filled(shape.batch * kSeq * 3 * kHidden);
  std::vector<float> probs(static_cast<std::size_t>(shape.batch * kHeads * kSeq * kSeq));
  std::vector<float> out(static_cast<std::size_t>(shape.batch * kSeq * kHidden));
  for (auto _ : state) {
    attention_forward(shape, qkv.data(), probs.data(), out.data());
    benchmark::ClobberMemory();
  }
  // FLOPs of the two full S x S products, as the model counts them.
  state.SetItemsProcessed(state.iterations() * 4 * shape.batch * kSeq * kSeq * kHidden);
}

void BM_AttentionBackward(benchmark::State& state) {
  const AttentionShape shape{state.range(0), kSeq, kHidden, kHeads};
  const std::vector<float> qkv = filled(shape.batch * kSeq * 3 * kHidden);
  std::vector<float> probs(static_cast<std::size_t>(shape.batch * kHeads * kSeq * kSeq));
  std::vector<float> out(static_cast<std::size_t>(shape.batch * kSeq * kHidden));
  attention_forward(shape, qkv.data(), probs.data(), out.data());
  const std::vector<float> dout = filled(shape.batch * kSeq * kHidden, 1.0F);
  std::vector<float> dqkv(qkv.size());
  for (auto _ : state) {
    attention_backward(shape, qkv.data(), probs.data(), dout.data(), dqkv.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 8 * shape.batch * kSeq * kSeq * kHidden);
}

// Flash attention at the same shape, and at a Llama-like one: range(0)
// samples; range(1) 0 for the transformer's (S 128, A 4, d 64), 1 for
// S 512 with 8 query heads sharing 2 kv heads (d 64). items: the FLOPs of
// the causal triangle the kernel computes, forward 2 products and backward 5
// (models/attention_cost.hpp).
AttentionShape flash_shape(const benchmark::State& state) {
  if (state.range(1) == 0) return {state.range(0), kSeq, kHidden, kHeads, kHeads, true};
  return {state.range(0), 512, 512, 8, 2, true};
}

double triangle_product_flops(const AttentionShape& s) {
  return 2.0 * static_cast<double>(s.batch) * s.seq * (s.seq + 1) / 2.0 * static_cast<double>(s.hidden);
}

void BM_FlashAttentionForward(benchmark::State& state) {
  const AttentionShape shape = flash_shape(state);
  const std::vector<float> qkv = filled(shape.batch * shape.seq * shape.qkv_width());
  std::vector<float> out(static_cast<std::size_t>(shape.batch * shape.seq * shape.hidden));
  std::vector<float> lse(static_cast<std::size_t>(shape.batch * shape.heads * shape.seq));
  for (auto _ : state) {
    flash_attention_forward(shape, qkv.data(), out.data(), lse.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 2 * triangle_product_flops(shape)));
}

void BM_FlashAttentionBackward(benchmark::State& state) {
  const AttentionShape shape = flash_shape(state);
  const std::vector<float> qkv = filled(shape.batch * shape.seq * shape.qkv_width());
  std::vector<float> out(static_cast<std::size_t>(shape.batch * shape.seq * shape.hidden));
  std::vector<float> lse(static_cast<std::size_t>(shape.batch * shape.heads * shape.seq));
  flash_attention_forward(shape, qkv.data(), out.data(), lse.data());
  const std::vector<float> dout = filled(shape.batch * shape.seq * shape.hidden, 1.0F);
  std::vector<float> dqkv(qkv.size());
  for (auto _ : state) {
    flash_attention_backward(shape, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 5 * triangle_product_flops(shape)));
}

// The naive kernel at the Llama-like shape, beside the flash one.
void BM_AttentionGqaForward(benchmark::State& state) {
  const AttentionShape shape{state.range(0), 512, 512, 8, 2, true};
  const std::vector<float> qkv = filled(shape.batch * shape.seq * shape.qkv_width());
  std::vector<float> probs(static_cast<std::size_t>(shape.batch * shape.heads * shape.seq * shape.seq));
  std::vector<float> out(static_cast<std::size_t>(shape.batch * shape.seq * shape.hidden));
  for (auto _ : state) {
    attention_forward(shape, qkv.data(), probs.data(), out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 4.0 * shape.batch * shape.seq *
                                                    shape.seq * shape.hidden));
}

void BM_AttentionGqaBackward(benchmark::State& state) {
  const AttentionShape shape{state.range(0), 512, 512, 8, 2, true};
  const std::vector<float> qkv = filled(shape.batch * shape.seq * shape.qkv_width());
  std::vector<float> probs(static_cast<std::size_t>(shape.batch * shape.heads * shape.seq * shape.seq));
  std::vector<float> out(static_cast<std::size_t>(shape.batch * shape.seq * shape.hidden));
  attention_forward(shape, qkv.data(), probs.data(), out.data());
  const std::vector<float> dout = filled(shape.batch * shape.seq * shape.hidden, 1.0F);
  std::vector<float> dqkv(qkv.size());
  for (auto _ : state) {
    attention_backward(shape, qkv.data(), probs.data(), dout.data(), dqkv.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 8.0 * shape.batch * shape.seq *
                                                    shape.seq * shape.hidden));
}

void BM_CrossEntropy(benchmark::State& state) {
  const std::int64_t rows = rows_of(state);
  const std::vector<float> logits = filled(rows * kVocab);
  std::vector<float> work(logits.size());
  std::vector<std::int32_t> targets(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < targets.size(); ++r) targets[r] = static_cast<std::int32_t>(r % kVocab);
  std::vector<float> loss(static_cast<std::size_t>(rows));
  const std::vector<float> scale(static_cast<std::size_t>(rows), 1.0F / static_cast<float>(rows));
  for (auto _ : state) {
    work = logits;
    cross_entropy_forward(rows, kVocab, work.data(), targets.data(), loss.data());
    cross_entropy_backward(rows, kVocab, work.data(), targets.data(), scale.data(), work.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * kVocab * 16);
}

// One AdamW step over a transformer block's 12 H^2 + 13 H parameters.
void BM_AdamW(benchmark::State& state) {
  const std::int64_t count = 12 * kHidden * kHidden + 13 * kHidden;
  std::vector<cpu::Parameter> parameters;
  parameters.push_back({"w", Tensor({count}), Tensor({count})});
  OptimizerConfig config;
  config.kind = gpipe::models::Optimizer::adamw;
  OptimizerState optimizer(config, parameters);
  const std::vector<float> g = filled(count);
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(g.begin(), g.end(), parameters[0].grad.data());
    state.ResumeTiming();
    optimizer.step(parameters);
  }
  state.SetBytesProcessed(state.iterations() * count * 20);  // w, m, v read and written, g read
}

// 16 samples (K=1, batch 16) and 2 (K=2, M=8).
#define GPIPE_OPS_BENCHMARK(name) BENCHMARK(name)->Arg(16)->Arg(2)->Unit(benchmark::kMicrosecond)
GPIPE_OPS_BENCHMARK(BM_GeluForward);
GPIPE_OPS_BENCHMARK(BM_GeluBackward);
GPIPE_OPS_BENCHMARK(BM_LayerNormForward);
GPIPE_OPS_BENCHMARK(BM_LayerNormBackward);
GPIPE_OPS_BENCHMARK(BM_LinearBackwardWeight);
GPIPE_OPS_BENCHMARK(BM_AttentionForward);
GPIPE_OPS_BENCHMARK(BM_AttentionBackward);
GPIPE_OPS_BENCHMARK(BM_CrossEntropy);
BENCHMARK(BM_FlashAttentionForward)->Args({16, 0})->Args({2, 0})->Args({1, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FlashAttentionBackward)->Args({16, 0})->Args({2, 0})->Args({1, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionGqaForward)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionGqaBackward)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AdamW)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
