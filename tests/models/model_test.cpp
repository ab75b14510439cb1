// Layer kinds and model families: exact parameters, FLOPs and bytes computed by
// hand from the shapes (model.hpp's contract), layer lists, the unbalanced ramp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "models/families.hpp"
#include "models/model.hpp"
#include "tests/error_of.hpp"

namespace gpipe::models {
namespace {

std::vector<std::string> names(const Model& model) {
  std::vector<std::string> out;
  for (const Layer& layer : model.layers) out.push_back(layer.name);
  return out;
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(bytes_per_element(DType::fp32), 4);
  EXPECT_EQ(bytes_per_element(DType::bf16), 2);
  EXPECT_EQ(to_string(DType::fp32), "fp32");
  EXPECT_EQ(to_string(DType::bf16), "bf16");
  EXPECT_EQ(to_string(DType::fp8), "fp8");
  EXPECT_EQ(bytes_per_element(DType::fp8), 2);  // fp8 GEMMs, tensors stored as bf16
  EXPECT_EQ(parse_dtype("fp8"), DType::fp8);
  EXPECT_EQ(parse_dtype("fp32"), DType::fp32);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp16"), std::nullopt);
  EXPECT_EQ(parse_dtype("FP32"), std::nullopt);
  EXPECT_EQ(dtype_names(), "fp32, bf16, fp8");
}

TEST(DType, SizesByProfileName) {
  // A profile names its dtype as text; fp16 is a size only, not a DType.
  EXPECT_EQ(bytes_per_element("fp32"), 4);
  EXPECT_EQ(bytes_per_element("bf16"), 2);
  EXPECT_EQ(bytes_per_element("fp16"), 2);
  EXPECT_EQ(gpipe::testing::error_of([] { (void)bytes_per_element("int8"); }),
            "dtype 'int8': unknown (fp32, bf16, fp16, fp8)");
}

TEST(MlpBlock, CountsByHandAtHidden4) {
  const Layer l = mlp_block_layer("block0", 4, 16);
  EXPECT_EQ(l.kind, "mlp_block");
  EXPECT_EQ(l.ffn_width, 16);
  // LN 2H + fc1 H*4H+4H + fc2 4H*H+H.
  EXPECT_EQ(l.params, 8 + (64 + 16) + (64 + 4));
  // fc1 2*4*16, fc2 2*16*4.
  EXPECT_EQ(l.fwd_flops, 128.0 + 128.0);
  EXPECT_EQ(l.bwd_input_flops, 256.0);
  EXPECT_EQ(l.bwd_weight_flops, 256.0);
  EXPECT_EQ(l.bwd_flops(), 512.0);
  EXPECT_EQ(l.input_elems, 4);
  EXPECT_EQ(l.output_elems, 4);
  // x 4, LN out 4, mean+rstd 2, pre-GELU 16, GELU out 16.
  EXPECT_EQ(l.activation_elems, 4 + 4 + 2 + 16 + 16);
  EXPECT_EQ(l.input_index_bytes + l.activation_fixed_bytes + l.target_elems, 0);
  // W keeps LN out 4, d pre-GELU 16, GELU out 16, d y 4.
  EXPECT_EQ(l.weight_grad_stash_elems, 4 + 16 + 16 + 4);
  EXPECT_EQ(l.weight_grad_stash_fixed_bytes, 0);
  EXPECT_EQ(weight_grad_stash_bytes_at(l, 3, DType::fp32), 3 * 40 * 4);
  EXPECT_EQ(weight_grad_stash_bytes_at(l, 3, DType::bf16), 3 * 40 * 2);
}

TEST(MlpBlock, BytesScaleWithMicroBatchAndDType) {
  const Layer l = mlp_block_layer("block0", 4, 16);
  EXPECT_EQ(bytes_at(l, 1, DType::fp32), (LayerBytes{16, 16, 168}));
  EXPECT_EQ(bytes_at(l, 3, DType::fp32), (LayerBytes{48, 48, 504}));
  EXPECT_EQ(bytes_at(l, 1, DType::bf16), (LayerBytes{8, 8, 84}));
  EXPECT_EQ(bytes_at(l, 3, DType::bf16), (LayerBytes{24, 24, 252}));
  EXPECT_EQ(param_bytes(l, DType::fp32), 156 * 4);
  EXPECT_EQ(param_bytes(l, DType::bf16), 156 * 2);
}

TEST(MseLoss, KeepsPredictionAndTarget) {
  const Layer l = mse_loss_layer(4);
  EXPECT_EQ(l.name, "loss");
  EXPECT_EQ(l.kind, "mse_loss");
  EXPECT_EQ(l.params, 0);
  EXPECT_EQ(l.fwd_flops + l.bwd_flops(), 0.0);
  EXPECT_EQ(l.target_elems, 4);
  EXPECT_EQ(l.output_elems, 1);
  EXPECT_EQ(bytes_at(l, 1, DType::fp32), (LayerBytes{16, 4, 32}));
  EXPECT_EQ(bytes_at(l, 3, DType::fp32), (LayerBytes{48, 12, 96}));
  EXPECT_EQ(bytes_at(l, 3, DType::bf16), (LayerBytes{24, 6, 48}));
  EXPECT_EQ(weight_grad_stash_bytes_at(l, 3, DType::fp32), 0);  // no parameters
}

// hidden 8, heads 2 (d = 4), seq 4, vocab 16.
const TransformerShape kSmall{.layers = 2, .hidden = 8, .heads = 2, .seq = 4, .vocab = 16};

TEST(Embedding, CountsByHand) {
  const Layer l = embedding_layer(kSmall);
  EXPECT_EQ(l.name, "embed");
  EXPECT_EQ(l.kind, "embedding");
  EXPECT_EQ(l.params, 16 * 8 + 4 * 8);
  EXPECT_EQ(l.fwd_flops + l.bwd_flops(), 0.0);
  EXPECT_EQ(l.input_elems, 0);
  EXPECT_EQ(l.input_index_bytes, 16);
  EXPECT_EQ(l.output_elems, 32);
  // The ids are integers: their bytes do not depend on the dtype.
  EXPECT_EQ(bytes_at(l, 1, DType::fp32), (LayerBytes{16, 128, 16}));
  EXPECT_EQ(bytes_at(l, 3, DType::fp32), (LayerBytes{48, 384, 48}));
  EXPECT_EQ(bytes_at(l, 3, DType::bf16), (LayerBytes{48, 192, 48}));
  // Its weight gradient needs d h (128 floats a sample), more than the ids: I does it.
  EXPECT_EQ(weight_grad_stash_bytes_at(l, 3, DType::fp32), 0);
}

TEST(TransformerBlock, CountsByHand) {
  const Layer l = transformer_block_layer("block1", kSmall);
  EXPECT_EQ(l.name, "block1");
  EXPECT_EQ(l.kind, "transformer_block");
  EXPECT_EQ(l.ffn_width, 32);
  // LN1 16, Wqkv 8*24+24, Wo 64+8, LN2 16, W1 8*32+32, W2 32*8+8.
  EXPECT_EQ(l.params, 16 + 216 + 72 + 16 + 288 + 264);
  // Per sample of 4 tokens: qkv 2*4*8*24, q k^T 2 heads * 2*4*4*4, P v the same,
  // Wo 2*4*8*8, W1 and W2 2*4*8*32 each.
  const double qkv = 1536, scores = 256, pv = 256, wo = 512, w1 = 2048, w2 = 2048;
  EXPECT_EQ(l.fwd_flops, qkv + scores + pv + wo + w1 + w2);
  EXPECT_EQ(l.bwd_input_flops, qkv + wo + w1 + w2 + 2 * scores + 2 * pv);
  EXPECT_EQ(l.bwd_weight_flops, qkv + wo + w1 + w2);
  EXPECT_EQ(l.input_elems, 32);
  EXPECT_EQ(l.output_elems, 32);
  // x 32, LN1 out 32, LN1 stats 8, qkv 96, P 2*4*4, attn out 32, a 32,
  // LN2 out 32, LN2 stats 8, pre-GELU 128, GELU out 128.
  EXPECT_EQ(l.activation_elems, 32 + 32 + 8 + 96 + 32 + 32 + 32 + 32 + 8 + 128 + 128);
  EXPECT_EQ(bytes_at(l, 1, DType::fp32), (LayerBytes{128, 128, 2240}));
  EXPECT_EQ(bytes_at(l, 3, DType::fp32), (LayerBytes{384, 384, 6720}));
  EXPECT_EQ(bytes_at(l, 3, DType::bf16), (LayerBytes{192, 192, 3360}));
  // W keeps LN1 out 32, d qkv 96, attn out 32, d a 32, LN2 out 32, d pre-GELU
  // 128, GELU out 128, d y 32 = 16SH.
  EXPECT_EQ(l.weight_grad_stash_elems, 32 + 96 + 32 + 32 + 32 + 128 + 128 + 32);
  EXPECT_EQ(l.weight_grad_stash_elems, 16 * 4 * 8);
  EXPECT_EQ(weight_grad_stash_bytes_at(l, 3, DType::fp32), 3 * 512 * 4);
}

TEST(LmHead, CountsByHand) {
  const Layer l = lm_head_layer(kSmall);
  EXPECT_EQ(l.name, "head");
  EXPECT_EQ(l.kind, "lm_head");
  EXPECT_EQ(l.params, 16 + 16 * 8);
  EXPECT_EQ(l.fwd_flops, 2.0 * 4 * 8 * 16);
  EXPECT_EQ(l.bwd_input_flops, 1024.0);
  EXPECT_EQ(l.bwd_weight_flops, 1024.0);
  EXPECT_EQ(l.target_index_bytes, 16);
  // x 32, LN out 32, stats 8, probabilities 4*16; targets 4 int32.
  EXPECT_EQ(l.activation_elems, 32 + 32 + 8 + 64);
  EXPECT_EQ(l.activation_fixed_bytes, 16);
  EXPECT_EQ(bytes_at(l, 1, DType::fp32), (LayerBytes{128, 4, 136 * 4 + 16}));
  EXPECT_EQ(bytes_at(l, 3, DType::fp32), (LayerBytes{384, 12, 3 * (136 * 4 + 16)}));
  EXPECT_EQ(bytes_at(l, 3, DType::bf16), (LayerBytes{192, 6, 3 * (136 * 2 + 16)}));
  // W keeps LN out 32 and d logits 64 (in the probabilities' storage).
  EXPECT_EQ(l.weight_grad_stash_elems, 32 + 64);
  EXPECT_EQ(weight_grad_stash_bytes_at(l, 3, DType::fp32), 3 * 96 * 4);
}

TEST(BytesAt, RejectsAMicroBatchBelowOne) {
  const Layer l = mse_loss_layer(4);
  for (int b : {0, -2}) {
    try {
      (void)bytes_at(l, b, DType::fp32);
      FAIL() << b;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("micro-batch size"), std::string::npos) << e.what();
    }
    try {
      (void)weight_grad_stash_bytes_at(l, b, DType::fp32);
      FAIL() << b;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("micro-batch size"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'loss'"), std::string::npos) << e.what();
    }
  }
}

TEST(MlpModel, LayerListAndParams) {
  const Model m = build_mlp(2, 4);
  EXPECT_EQ(m.spec, "mlp:layers=2,hidden=4");
  EXPECT_EQ(m.family, "mlp");
  EXPECT_EQ(names(m), (std::vector<std::string>{"block0", "block1", "loss"}));
  EXPECT_EQ(m.layers[1].kind, "mlp_block");
  EXPECT_EQ(m.layers[1].ffn_width, 16);
  EXPECT_EQ(m.params(), 2 * 156);
  EXPECT_EQ(m.num_blocks, 2);
  EXPECT_EQ(m.hidden, 4);
  EXPECT_EQ(m.heads + m.seq + m.vocab, 0);
}

TEST(TransformerModel, LayerListAndParams) {
  const Model m = build_transformer(kSmall);
  EXPECT_EQ(m.spec, "transformer:layers=2,hidden=8,heads=2,seq=4,vocab=16");
  EXPECT_EQ(m.family, "transformer");
  EXPECT_EQ(names(m), (std::vector<std::string>{"embed", "block0", "block1", "head"}));
  EXPECT_EQ(m.params(), 160 + 2 * 872 + 144);
  EXPECT_EQ(m.num_blocks, 2);
  EXPECT_EQ(m.hidden, 8);
  EXPECT_EQ(m.heads, 2);
  EXPECT_EQ(m.seq, 4);
  EXPECT_EQ(m.vocab, 16);
  // Each layer's output is the next one's input.
  for (std::size_t i = 0; i + 1 < m.layers.size(); ++i) {
    EXPECT_EQ(m.layers[i].output_elems, m.layers[i + 1].input_elems) << m.layers[i].name;
  }
}

TEST(TransformerModel, DefaultVocabIsLeftOutOfTheSpec) {
  TransformerShape shape = kSmall;
  shape.vocab = kDefaultVocab;
  EXPECT_EQ(build_transformer(shape).spec, "transformer:layers=2,hidden=8,heads=2,seq=4");
  EXPECT_EQ(kDefaultVocab, 256);
}

TEST(UnbalancedModel, InnerWidthsRampFromHTo8H) {
  std::vector<std::int64_t> widths;
  for (int i = 0; i < 5; ++i) widths.push_back(unbalanced_ffn_width(i, 5, 4));
  // 1 + floor(7i/4) for i = 0..4: 1, 2, 4, 6, 8.
  EXPECT_EQ(widths, (std::vector<std::int64_t>{4, 8, 16, 24, 32}));
  EXPECT_EQ(unbalanced_ffn_width(0, 1, 4), 4);
  const Model m = build_unbalanced(5, 4);
  EXPECT_EQ(m.spec, "unbalanced:layers=5,hidden=4");
  EXPECT_EQ(m.family, "unbalanced");
  EXPECT_EQ(names(m),
            (std::vector<std::string>{"block0", "block1", "block2", "block3", "block4", "loss"}));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(m.layers[i], mlp_block_layer(m.layers[i].name, 4, widths[i]));
  }
}

TEST(UnbalancedModel, IsReallyUnbalanced) {
  const Model m = build_unbalanced(8, 16);
  std::vector<double> cost;  // fwd + bwd of each block
  for (int i = 0; i < 8; ++i) cost.push_back(m.layers[i].fwd_flops + m.layers[i].bwd_flops());
  const auto [lo, hi] = std::minmax_element(cost.begin(), cost.end());
  EXPECT_GT(*hi / *lo, 2.0);
  EXPECT_EQ(*hi / *lo, 8.0);
  // Widths 1..8 x H. Two blocks a stage (uniform, K=4) puts 7+8 = 15 units on
  // the last stage; the split 4,2,1,1 has at most 5+6 = 11.
  const double unit = cost[0];
  auto stage_max = [&](const std::vector<int>& counts) {
    double worst = 0;
    int first = 0;
    for (int n : counts) {
      double sum = 0;
      for (int i = first; i < first + n; ++i) sum += cost[i];
      worst = std::max(worst, sum);
      first += n;
    }
    return worst / unit;
  };
  EXPECT_EQ(stage_max({2, 2, 2, 2}), 15.0);
  EXPECT_EQ(stage_max({4, 2, 1, 1}), 11.0);
  // The mlp family, for contrast, has equal blocks.
  const Model mlp = build_mlp(8, 16);
  Layer last = mlp.layers[7];
  last.name = "block0";
  EXPECT_EQ(last, mlp.layers[0]);
}

}  // namespace
}  // namespace gpipe::models
