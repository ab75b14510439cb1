// Tensor parallelism's split (models/tensor_parallel.hpp): one GPU's
// parameters, stash, FLOPs and collectives, counted by hand for a small
// llama (H 64, A 4, G 2, F 96, S 16, V 101: d 16, qkv 128) at T = 2, with and
// without sequence parallelism; what GPT's split keeps whole; and the one-line
// errors.
#include <gtest/gtest.h>

#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "tests/error_of.hpp"

namespace gpipe::models {
namespace {

using gpipe::testing::error_of;
using P = TensorParallelPass;
using C = Collective;

constexpr const char* kLlama = "llama:layers=2,hidden=64,heads=4,kv_heads=2,ffn=96,seq=16,vocab=101";

TEST(TensorParallel, OneGpuIsTheWholeModel) {
  const Model model = parse_model(kLlama);
  EXPECT_EQ(split_tensor_parallel(model, {}), model);
}

TEST(TensorParallel, LlamaAtTwoKeepsOneGpusShare) {
  const Model whole = parse_model(kLlama);
  const Model model = split_tensor_parallel(whole, {.degree = 2});
  EXPECT_EQ(model.tensor_parallel, 2);
  EXPECT_FALSE(model.sequence_parallel);
  const Layer& embed = model.layers[0];
  const Layer& block = model.layers[1];
  const Layer& head = model.layers[3];
  // Norms 2 x 64, Wqkv 64 x 64, Wo 64 x 32, w1 and w3 48 x 64, w2 64 x 48.
  EXPECT_EQ(block.params, 128 + 4096 + 2048 + 2 * 3072 + 3072);
  EXPECT_EQ(2 * block.params - whole.layers[1].params, 128);  // only the norms are whole on both
  // The vocabulary split, ceil(101 / 2) = 51 rows.
  EXPECT_EQ(embed.params, 51 * 64);
  EXPECT_EQ(head.params, 64 + 51 * 64);
  EXPECT_EQ(model.params(), 51 * 64 + 2 * block.params + 64 + 51 * 64);
  // x, norm1, a, norm2 whole [16, 64] (4096), two rstd [16], qkv [16, 64],
  // the log-sum-exp of 2 heads [2, 16], attention out [16, 32], gate, up,
  // swiglu [16, 48] each.
  EXPECT_EQ(block.activation_elems, 4096 + 32 + 1024 + 32 + 512 + 3 * 768);
  EXPECT_EQ(block.weight_grad_stash_elems, 5 * 1024 + 512 + 3 * 768);  // norm1, d_qkv, d_a, norm2, d_out; attention; d_gate, d_up, swiglu
  EXPECT_EQ(block.input_elems, 16 * 64);
  EXPECT_EQ(block.output_elems, 16 * 64);
  // Head: x, norm whole, rstd, the probabilities over 51 words.
  EXPECT_EQ(head.activation_elems, 1024 + 1024 + 16 + 16 * 51);
  // Every FLOP of a block halves; the head's logits cover 51 of 101 words.
  EXPECT_EQ(block.fwd_flops, whole.layers[1].fwd_flops / 2);
  EXPECT_EQ(block.bwd_input_flops, whole.layers[1].bwd_input_flops / 2);
  EXPECT_EQ(block.bwd_weight_flops, whole.layers[1].bwd_weight_flops / 2);
  EXPECT_EQ(head.fwd_flops, 2.0 * 16 * 64 * 51);
  // Two all-reduces of E = 16 x 64 each way; the embedding's one forward;
  // the head's three of S for the cross-entropy and one of E back.
  EXPECT_EQ(collective_elems(block, P::forward, C::all_reduce), 2 * 1024);
  EXPECT_EQ(collective_elems(block, P::input, C::all_reduce), 2 * 1024);
  EXPECT_EQ(block.collectives.size(), 4U);
  EXPECT_EQ(collective_elems(embed, P::forward, C::all_reduce), 1024);
  EXPECT_EQ(embed.collectives.size(), 1U);
  EXPECT_EQ(collective_elems(head, P::forward, C::all_reduce), 3 * 16);
  EXPECT_EQ(collective_elems(head, P::input, C::all_reduce), 1024);
  EXPECT_EQ(head.collectives.size(), 4U);
}

TEST(TensorParallel, SequenceParallelSplitsTheResidualStream) {
  const Model model = split_tensor_parallel(parse_model(kLlama), {.degree = 2, .sequence_parallel = true});
  EXPECT_TRUE(model.sequence_parallel);
  const Layer& embed = model.layers[0];
  const Layer& block = model.layers[1];
  const Layer& head = model.layers[3];
  // x, norm1, a, norm2 [8, 64] (2048), two rstd [8]; the rest as without.
  EXPECT_EQ(block.activation_elems, 2048 + 16 + 1024 + 32 + 512 + 3 * 768);
  // W keeps norm1, d_a, norm2, d_out split and gathers them again.
  EXPECT_EQ(block.weight_grad_stash_elems, 4 * 512 + 1024 + 512 + 3 * 768);
  EXPECT_EQ(block.input_elems, 8 * 64);  // what a stage sends: half the activation
  EXPECT_EQ(block.output_elems, 8 * 64);
  EXPECT_EQ(embed.output_elems, 8 * 64);
  EXPECT_EQ(head.input_elems, 8 * 64);
  // Each all-reduce a gather and a scatter; the weight gradient gathers the
  // norms again, a split W the output gradients too.
  EXPECT_EQ(collective_elems(block, P::forward, C::all_gather), 2 * 1024);
  EXPECT_EQ(collective_elems(block, P::forward, C::reduce_scatter), 2 * 1024);
  EXPECT_EQ(collective_elems(block, P::forward, C::all_reduce), 0);
  EXPECT_EQ(collective_elems(block, P::input, C::all_gather), 2 * 1024);
  EXPECT_EQ(collective_elems(block, P::input, C::reduce_scatter), 2 * 1024);
  EXPECT_EQ(collective_elems(block, P::weight, C::all_gather), 2 * 1024);
  EXPECT_EQ(collective_elems(block, P::split_weight, C::all_gather), 2 * 1024);
  EXPECT_EQ(collective_elems(embed, P::forward, C::reduce_scatter), 1024);
  EXPECT_EQ(collective_elems(embed, P::input, C::all_gather), 1024);
  EXPECT_EQ(collective_elems(head, P::forward, C::all_gather), 1024);
  EXPECT_EQ(collective_elems(head, P::forward, C::all_reduce), 3 * 16);
  EXPECT_EQ(collective_elems(head, P::input, C::reduce_scatter), 1024);
  EXPECT_EQ(collective_elems(head, P::weight, C::all_gather), 1024);
}

TEST(TensorParallel, GptKeepsItsNormsAndRowParallelBiasesWhole) {
  const Model whole = parse_model("transformer:layers=1,hidden=64,heads=4,seq=16,vocab=256");
  for (const int t : {2, 4}) {
    const Model model = split_tensor_parallel(whole, {.degree = t});
    // LN1, LN2 (2H each), bo and b2 (H each) on every GPU; the rest split.
    EXPECT_EQ(t * model.layers[1].params - whole.layers[1].params, (t - 1) * 6 * 64) << t;
    EXPECT_EQ(model.layers[1].fwd_flops * t, whole.layers[1].fwd_flops) << t;
  }
}

TEST(TensorParallel, WeightGradientStashNeverExceedsTheStash) {
  for (const char* spec : {"llama:layers=1,hidden=64,heads=4,ffn=96,seq=16,vocab=101",
                           "llama:layers=1,hidden=64,heads=4,ffn=96,seq=16,vocab=101,attn=naive",
                           "transformer:layers=1,hidden=64,heads=4,seq=16,vocab=256,attn=flash",
                           "transformer:layers=1,hidden=64,heads=4,seq=16,vocab=256"}) {
    for (const int t : {2, 4}) {
      for (const bool sp : {false, true}) {
        const Model model = split_tensor_parallel(parse_model(spec), {.degree = t, .sequence_parallel = sp});
        for (const Layer& layer : model.layers) {
          EXPECT_LE(layer.weight_grad_stash_elems, layer.activation_elems)
              << spec << " T=" << t << " sp=" << sp << " " << layer.name;
        }
      }
    }
  }
}

TEST(TensorParallel, ImpossibleSplitsAreOneLine) {
  const Model llama = parse_model(kLlama);
  EXPECT_EQ(error_of([&] { (void)split_tensor_parallel(llama, {.degree = 0}); }),
            "--tensor-parallel 0: give 1 or more GPUs a stage");
  EXPECT_EQ(error_of([&] { (void)split_tensor_parallel(llama, {.degree = 3}); }),
            "--tensor-parallel 3 does not divide the 4 attention heads");
  EXPECT_EQ(error_of([&] { (void)split_tensor_parallel(llama, {.degree = 4}); }),
            "--tensor-parallel 4 does not divide the 2 key/value heads");
  EXPECT_EQ(error_of([] {
              (void)split_tensor_parallel(parse_model("llama:layers=1,hidden=64,heads=4,ffn=90,seq=16,vocab=64"),
                                          {.degree = 4});
            }),
            "--tensor-parallel 4 does not divide block0's feed-forward width 90");
  EXPECT_EQ(error_of([] {
              (void)split_tensor_parallel(parse_model("llama:layers=1,hidden=64,heads=4,ffn=96,seq=18,vocab=64"),
                                          {.degree = 4, .sequence_parallel = true});
            }),
            "--sequence-parallel: --tensor-parallel 4 does not divide the sequence of 18");
  EXPECT_EQ(error_of([&] { (void)split_tensor_parallel(llama, {.degree = 1, .sequence_parallel = true}); }),
            "--sequence-parallel splits over the tensor-parallel group: give --tensor-parallel 2 or more");
  EXPECT_EQ(error_of([] {
              (void)split_tensor_parallel(parse_model("dit:layers=1,hidden=64,heads=4,tokens=16"), {.degree = 2});
            }),
            "--tensor-parallel 2: tensor parallelism splits the transformer and llama families' blocks; dit has "
            "none");
  const Model split = split_tensor_parallel(llama, {.degree = 2});
  EXPECT_EQ(error_of([&] { (void)split_tensor_parallel(split, {.degree = 2}); }),
            std::string(kLlama) + ": already split over 2 GPUs");
}

}  // namespace
}  // namespace gpipe::models
