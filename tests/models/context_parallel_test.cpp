// Context parallelism (models/context_parallel.hpp): the split's refusals,
// each GPU's numbers against the closed forms of the header (its tokens S / C,
// its FLOPs / C, the tensor group's collectives over its tokens, the context
// group's sharing of the keys and values) and the kernels summing to the
// FLOPs (tests/profiles/collective_overlap_test.cpp prices them).
#include <gtest/gtest.h>

#include <string>

#include "models/context_parallel.hpp"
#include "models/layer_kernels.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "tests/error_of.hpp"

namespace gpipe::models {
namespace {

// S 512, H 256, A 8, G 2 (d 32), F 704.
using testing::error_of;

constexpr const char* kCpLlama = "llama:layers=2,hidden=256,heads=8,kv_heads=2,ffn=704,seq=512,vocab=1000";

Model split_both(const std::string& spec, int t, int c, ContextParallelForm form = ContextParallelForm::all_gather) {
  return split_context_parallel(split_tensor_parallel(parse_model(spec), {.degree = t, .sequence_parallel = t > 1}),
                                {.degree = c, .form = form});
}

TEST(ContextParallel, RefusesWhatItCannotSplit) {
  const Model llama = parse_model(kCpLlama);
  EXPECT_EQ(split_context_parallel(llama, {.degree = 1}), llama);
  EXPECT_EQ(error_of([&] { (void)split_context_parallel(llama, {.degree = 0}); }),
            "--context-parallel 0: give 1 or more GPUs a sequence");
  EXPECT_EQ(error_of([&] { (void)split_context_parallel(llama, {.degree = 3}); }),
            "--context-parallel 3: 2C = 6 does not divide the sequence of 512 (its load-balanced chunks, two a GPU)");
  EXPECT_EQ(error_of([&] { (void)split_context_parallel(parse_model(std::string(kCpLlama) + ",attn=naive"), {.degree = 2}); }),
            "--context-parallel 2: " + std::string(kCpLlama) +
                ",attn=naive has naive attention, whose S x S probabilities context parallelism does not split; use "
                "attn=flash");
  EXPECT_NE(error_of([&] { (void)split_context_parallel(parse_model("mlp:layers=2,hidden=8"), {.degree = 2}); })
                .find("splits the transformer and llama families' sequences; mlp has none"),
            std::string::npos);
  const Model split = split_context_parallel(llama, {.degree = 2});
  EXPECT_NE(error_of([&] { (void)split_context_parallel(split, {.degree = 2}); }).find("already split"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)split_tensor_parallel(split, {.degree = 2}); })
                .find("split over the tensor-parallel group first"),
            std::string::npos);
  EXPECT_EQ(parse_context_parallel_form("ring"), ContextParallelForm::ring);
  EXPECT_EQ(parse_context_parallel_form("all-gather"), ContextParallelForm::all_gather);
  EXPECT_EQ(parse_context_parallel_form("allgather"), std::nullopt);
  EXPECT_EQ(to_string(ContextParallelForm::ring), "ring");
}

// A GPU of the group keeps what the whole model keeps at S / C tokens (the
// attention's log-sum-exp is per query), its FLOPs are the whole's / C.
TEST(ContextParallel, AGpuHoldsItsTokensAndDoesItsShareOfTheFlops) {
  for (const int t : {1, 2}) {
    for (const int c : {2, 4}) {
      const Model whole = split_both(kCpLlama, t, 1);
      const Model cp = split_both(kCpLlama, t, c);
      const Model short_seq = split_both("llama:layers=2,hidden=256,heads=8,kv_heads=2,ffn=704,seq=" +
                                             std::to_string(512 / c) + ",vocab=1000",
                                         t, 1);
      EXPECT_EQ(cp.context_parallel, c);
      for (std::size_t l = 0; l < whole.layers.size(); ++l) {
        const Layer& a = cp.layers[l];
        EXPECT_EQ(a.activation_elems, short_seq.layers[l].activation_elems) << l << " " << t << " " << c;
        EXPECT_EQ(a.activation_fixed_bytes, short_seq.layers[l].activation_fixed_bytes) << l;
        EXPECT_EQ(a.input_elems, short_seq.layers[l].input_elems) << l;
        EXPECT_EQ(a.output_elems, short_seq.layers[l].output_elems) << l;
        EXPECT_EQ(a.params, whole.layers[l].params) << l;  // the weights whole
        EXPECT_DOUBLE_EQ(a.fwd_flops, whole.layers[l].fwd_flops / c) << l;
        EXPECT_DOUBLE_EQ(a.bwd_input_flops, whole.layers[l].bwd_input_flops / c) << l;
        EXPECT_DOUBLE_EQ(a.bwd_weight_flops, whole.layers[l].bwd_weight_flops / c) << l;
      }
    }
  }
}

// Per block and sample: the tensor group's collectives are the short
// sequence's; the context group's all-gather S kv forward, again and a
// reduce-scatter of the gradients backward (kv = 2 (G/T) d); the ring's the
// same bytes, three passes, beside the attention.
TEST(ContextParallel, TheGroupSharesTheKeysAndValues) {
  const std::int64_t s = 512, d = 32;
  for (const int t : {1, 2}) {
    const Model cp = split_both(kCpLlama, t, 4);
    const Model short_seq = split_both("llama:layers=2,hidden=256,heads=8,kv_heads=2,ffn=704,seq=128,vocab=1000", t, 1);
    const std::int64_t kv = 2 * (2 / t) * d;
    std::vector<LayerCollective> tensor, context;
    for (const LayerCollective& k : cp.layers[1].collectives) {
      (k.group == CollectiveGroup::tensor ? tensor : context).push_back(k);
    }
    EXPECT_EQ(tensor, short_seq.layers[1].collectives) << t;
    using P = TensorParallelPass;
    using C = Collective;
    const CollectiveGroup g = CollectiveGroup::context;
    EXPECT_EQ(context, (std::vector<LayerCollective>{{P::forward, C::all_gather, s * kv, g},
                                                      {P::input, C::all_gather, s * kv, g},
                                                      {P::input, C::reduce_scatter, s * kv, g}}))
        << t;
    // The embedding and the head share nothing over the group.
    for (const LayerCollective& k : cp.layers.front().collectives) EXPECT_EQ(k.group, CollectiveGroup::tensor);
    for (const LayerCollective& k : cp.layers.back().collectives) EXPECT_EQ(k.group, CollectiveGroup::tensor);
  }
  const Model ring = split_both(kCpLlama, 1, 4, ContextParallelForm::ring);
  ASSERT_EQ(ring.layers[1].collectives.size(), 3U);
  for (const LayerCollective& k : ring.layers[1].collectives) {
    EXPECT_TRUE(k.beside_attention);
    EXPECT_EQ(k.collective, Collective::all_gather);
    EXPECT_EQ(k.elems, s * 2 * 2 * d);
  }
}

TEST(ContextParallel, TheKernelsSumToTheFlops) {
  const Model cp = split_both(kCpLlama, 2, 4);
  for (const Layer& layer : cp.layers) {
    for (const int b : {1, 3}) {
      const std::vector<Kernel> kernels = layer_kernels(cp, layer, b, DType::bf16);
      EXPECT_DOUBLE_EQ(kernel_flops(kernels, KernelPass::forward), b * layer.fwd_flops) << layer.name;
      EXPECT_DOUBLE_EQ(kernel_flops(kernels, KernelPass::input), b * layer.bwd_input_flops) << layer.name;
      EXPECT_DOUBLE_EQ(kernel_flops(kernels, KernelPass::weight), b * layer.bwd_weight_flops) << layer.name;
      for (const Kernel& k : kernels) {
        if (k.kind != KernelKind::attention) continue;
        EXPECT_EQ(k.m, b == 1 ? 512 / 4 : 512 / 4);  // this GPU's queries
        EXPECT_EQ(k.n, 512);                           // every key
      }
    }
  }
}

}  // namespace
}  // namespace gpipe::models
