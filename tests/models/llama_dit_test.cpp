// The llama and dit families and the transformer's attn=flash: exact
// parameters, FLOPs and kept elements computed by hand from the shapes
// (model.hpp's contract), and the presets' published sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "models/families.hpp"
#include "models/layer_layout.hpp"
#include "models/model_spec.hpp"
#include "models/presets.hpp"
#include "tests/error_of.hpp"

namespace gpipe::models {
namespace {

double forward_flops(const Model& model) {
  double total = 0;
  for (const Layer& layer : model.layers) total += layer.fwd_flops;
  return total;
}

// H 8, A 4 (d 2), G 2, F 12, S 5, V 11.
constexpr std::int64_t kH = 8, kA = 4, kG = 2, kF = 12, kS = 5, kV = 11;
const char* const kSmallLlama = "llama:layers=2,hidden=8,heads=4,kv_heads=2,ffn=12,seq=5,vocab=11";

TEST(LlamaModel, LayerListAndCanonicalSpec) {
  const Model m = parse_model(kSmallLlama);
  EXPECT_EQ(m.family, "llama");
  EXPECT_EQ(m.spec, kSmallLlama);  // flash and the Llama 3 rope base are the defaults
  ASSERT_EQ(m.layers.size(), 4U);
  EXPECT_EQ(m.layers[0].kind, layer_kind::token_embedding);
  EXPECT_EQ(m.layers[1].kind, layer_kind::llama_block);
  EXPECT_EQ(m.layers[3].kind, layer_kind::rms_head);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.attention, Attention::flash);
  EXPECT_EQ(m.rope_theta, 500000);
  // kv_heads defaults to heads and is then left out; naive is spelled out.
  EXPECT_EQ(parse_model("llama:layers=1,hidden=8,heads=4,ffn=12,seq=5,vocab=11,attn=naive").spec,
            "llama:layers=1,hidden=8,heads=4,ffn=12,seq=5,vocab=11,attn=naive");
  EXPECT_EQ(parse_model("llama:layers=1,hidden=8,heads=4,ffn=12,seq=5,vocab=11").kv_heads, 4);
}

TEST(LlamaBlock, CountsByHand) {
  const Model m = parse_model(kSmallLlama);
  const Layer& b = m.layers[1];
  const std::int64_t d = kH / kA, qkv = (kA + 2 * kG) * d;  // 16
  // norm1 H, Wqkv qkv x H, Wo H x H, norm2 H, w1 w3 F x H, w2 H x F.
  EXPECT_EQ(b.params, 2 * kH + qkv * kH + kH * kH + 3 * kH * kF);
  const double linears = 2.0 * kS * kH * (qkv + kH + 3 * kF);
  // Flash, causal: the triangle's 15 entries per head, 2 products forward, 5 backward.
  const double product = 2.0 * (kS * (kS + 1) / 2) * kH;
  EXPECT_DOUBLE_EQ(b.fwd_flops, linears + 2 * product);
  EXPECT_DOUBLE_EQ(b.bwd_input_flops, linears + 5 * product);
  EXPECT_DOUBLE_EQ(b.bwd_weight_flops, linears);
  // x, norm1, a, norm2, attention out: 5SH; qkv S(A+2G)d; gate, up, swiglu 3SF;
  // two rstd S each; the log-sum-exp AS.
  EXPECT_EQ(b.activation_elems, 5 * kS * kH + kS * qkv + 3 * kS * kF + 2 * kS + kA * kS);
  EXPECT_EQ(b.weight_grad_stash_elems, 5 * kS * kH + kS * qkv + 3 * kS * kF);
  EXPECT_EQ(b.input_elems, kS * kH);
  EXPECT_EQ(b.output_elems, kS * kH);

  const Layer naive = parse_model(std::string(kSmallLlama) + ",attn=naive").layers[1];
  EXPECT_EQ(naive.activation_elems, b.activation_elems - kA * kS + kA * kS * kS);
  const double full = 2.0 * kS * kS * kH;  // the whole S x S matrix
  EXPECT_DOUBLE_EQ(naive.fwd_flops, linears + 2 * full);
  EXPECT_DOUBLE_EQ(naive.bwd_input_flops, linears + 4 * full);
}

TEST(LlamaModel, EmbeddingAndHeadByHand) {
  const Model m = parse_model(kSmallLlama);
  const Layer& e = m.layers[0];
  EXPECT_EQ(e.params, kV * kH);  // no position table: the rotary embedding has no weights
  EXPECT_EQ(e.input_index_bytes, 4 * kS);
  EXPECT_EQ(e.activation_fixed_bytes, 4 * kS);
  EXPECT_EQ(e.activation_elems, 0);
  EXPECT_EQ(e.fwd_flops, 0);
  const Layer& h = m.layers[3];
  EXPECT_EQ(h.params, kH + kV * kH);  // final RMSNorm gamma and the untied unembedding
  EXPECT_DOUBLE_EQ(h.fwd_flops, 2.0 * kS * kH * kV);
  EXPECT_EQ(h.activation_elems, 2 * kS * kH + kS + kS * kV);
  EXPECT_EQ(h.activation_fixed_bytes, 4 * kS);
  EXPECT_EQ(h.weight_grad_stash_elems, kS * kH + kS * kV);
}

// tied=1: the head's unembedding is the token table, one matrix of V x H in
// the model's count, held by both layers.
TEST(LlamaModel, TiedSharesTheTokenTable) {
  const Model untied = parse_model("llama:layers=2,hidden=8,heads=2,ffn=16,seq=4,vocab=10");
  const Model tied = parse_model("llama:layers=2,hidden=8,heads=2,ffn=16,seq=4,vocab=10,tied=1");
  EXPECT_EQ(tied.spec, "llama:layers=2,hidden=8,heads=2,ffn=16,seq=4,vocab=10,tied=1");
  EXPECT_TRUE(tied.tied);
  EXPECT_FALSE(untied.tied);
  EXPECT_EQ(tied.params(), untied.params() - 10 * 8);
  EXPECT_EQ(tied.layers.front().tied_param, static_cast<int>(layout::token_embedding::kTok));
  EXPECT_EQ(tied.layers.back().tied_param, static_cast<int>(layout::rms_head::kWu));
  EXPECT_EQ(tied.layers.front().tied_elems, 80);
  EXPECT_EQ(tied.layers.back().tied_elems, 80);
  // Each layer keeps its own copy: the layers' own counts are the untied ones.
  for (std::size_t l = 0; l < tied.layers.size(); ++l) {
    EXPECT_EQ(tied.layers[l].params, untied.layers[l].params) << l;
    if (l > 0 && l + 1 < tied.layers.size()) {
      EXPECT_EQ(tied.layers[l].tied_param, -1) << l;
    }
  }
  EXPECT_EQ(untied.layers.front().tied_param, -1);
  EXPECT_EQ(untied.layers.back().tied_elems, 0);
}

// H 8, A 2, T 6, P 2, C 3 (patch 12 values in, 24 out), N 5 classes.
const char* const kSmallDit = "dit:layers=2,hidden=8,heads=2,tokens=6,channels=3,classes=5";

TEST(DitModel, LayerListAndCanonicalSpec) {
  const Model m = parse_model(kSmallDit);
  EXPECT_EQ(m.family, "dit");
  EXPECT_EQ(m.spec, kSmallDit);
  ASSERT_EQ(m.layers.size(), 4U);
  EXPECT_EQ(m.layers[0].kind, layer_kind::dit_embed);
  EXPECT_EQ(m.layers[2].kind, layer_kind::dit_block);
  EXPECT_EQ(m.layers[3].kind, layer_kind::dit_head);
  EXPECT_EQ(m.seq, 6);
  EXPECT_EQ(m.patch, 2);
  EXPECT_EQ(parse_model("dit:layers=1,hidden=8,heads=2,tokens=6,patch=2,attn=naive").spec,
            "dit:layers=1,hidden=8,heads=2,tokens=6,attn=naive");
}

// What a stage sends: DiT's blocks carry the conditioning row with the T
// tokens (the block's input_elems says so), the other families S rows or none.
TEST(Model, ActivationRowsAreWhatTheBlocksTake) {
  const Model dit = parse_model(kSmallDit);
  EXPECT_EQ(dit.activation_rows(), 7);
  EXPECT_EQ(dit.layers[1].input_elems, std::int64_t{dit.activation_rows()} * dit.hidden);
  const Model llama = parse_model(kSmallLlama);
  EXPECT_EQ(llama.activation_rows(), 5);
  EXPECT_EQ(llama.layers[1].input_elems, std::int64_t{llama.activation_rows()} * llama.hidden);
  EXPECT_EQ(parse_model("mlp:layers=2,hidden=8").activation_rows(), 0);
}

// cache=1: each block attends over the previous chunk's T tokens too, and
// keeps their keys and values (2 T H per sample) across an inference stream.
TEST(DitModel, TheAttentionCacheDoublesTheAttentionsForwardAndIsState) {
  const Model plain = parse_model(kSmallDit);
  const Model cached = parse_model(std::string(kSmallDit) + ",cache=1");
  EXPECT_EQ(cached.spec, std::string(kSmallDit) + ",cache=1");
  EXPECT_TRUE(cached.attention_cache);
  EXPECT_EQ(parse_model(std::string(kSmallDit) + ",cache=0").spec, kSmallDit);
  const std::int64_t h = 8, t = 6;
  const double attention_forward = 4.0 * t * t * h;  // q k^T and P v over T keys
  const Layer& b = cached.layers[1];
  EXPECT_DOUBLE_EQ(b.fwd_flops, plain.layers[1].fwd_flops + attention_forward);
  EXPECT_EQ(b.state_elems, 2 * t * h);
  EXPECT_EQ(bytes_at(b, 3, DType::fp32).state_bytes, 3 * 2 * t * h * 4);
  EXPECT_EQ(bytes_at(b, 3, DType::bf16).state_bytes, 3 * 2 * t * h * 2);
  EXPECT_EQ(b.params, plain.layers[1].params);
  EXPECT_EQ(b.activation_elems, plain.layers[1].activation_elems);
  EXPECT_EQ(cached.layers[0].state_elems, 0);
  EXPECT_EQ(cached.layers.back().state_elems, 0);
  EXPECT_EQ(plain.layers[1].state_elems, 0);
}

TEST(DitModel, CountsByHand) {
  const Model m = parse_model(kSmallDit);
  const std::int64_t h = 8, t = 6, pin = 12, pout = 24, f = 32, a = 2;
  const Layer& e = m.layers[0];
  // patch H x 12 + H, positions T x H, timestep MLP 256 -> H -> H, labels (N+1) x H.
  EXPECT_EQ(e.params, h * pin + h + t * h + (256 * h + h) + (h * h + h) + 6 * h);
  EXPECT_EQ(e.input_elems, t * pin + 2);
  EXPECT_EQ(e.output_elems, (t + 1) * h);  // the tokens and the conditioning row
  EXPECT_EQ(e.activation_elems, t * pin + 2 + 256 + 2 * h);
  EXPECT_EQ(e.weight_grad_stash_elems, 0);
  EXPECT_DOUBLE_EQ(e.fwd_flops, 2.0 * t * pin * h + 2.0 * 256 * h + 2.0 * h * h);
  EXPECT_DOUBLE_EQ(e.bwd_weight_flops, 0);

  const Layer& b = m.layers[1];
  EXPECT_EQ(b.params, 18 * h * h + 15 * h);  // DiT's block: adaLN 6H x H, qkv, proj, MLP
  const double linears = 24.0 * t * h * h + 12.0 * h * h;
  const double product = 2.0 * t * t * h;  // not causal: the whole matrix, flash or not
  EXPECT_DOUBLE_EQ(b.fwd_flops, linears + 2 * product);
  EXPECT_DOUBLE_EQ(b.bwd_input_flops, linears + 5 * product);
  EXPECT_DOUBLE_EQ(b.bwd_weight_flops, linears);
  // Per token x, LN1 modulated, qkv (3), attention, o, a, LN2 modulated,
  // pre-GELU and GELU (F each), mlp out: 10H + 2F; two LN stats (2 each);
  // the log-sum-exp A per token; per sample c (in x), SiLU(c) H and the
  // modulation 6H.
  EXPECT_EQ(b.activation_elems, t * (10 * h + 2 * f + 4 + a) + h + h + 6 * h);
  EXPECT_EQ(b.weight_grad_stash_elems, t * (8 * h + 2 * f) + 7 * h);
  EXPECT_EQ(b.input_elems, (t + 1) * h);

  const Layer& hd = m.layers[3];
  EXPECT_EQ(hd.params, 2 * h * h + 2 * h + pout * h + pout);
  EXPECT_EQ(hd.target_elems, t * pout);
  EXPECT_EQ(hd.output_elems, 1);
  EXPECT_EQ(hd.activation_elems, (t + 1) * h + h + 2 * h + 2 * t + t * h + 2 * t * pout);
}

TEST(TransformerModel, FlashKeepsTheLogSumExpForTheProbabilities) {
  const Model naive = parse_model("transformer:layers=1,hidden=8,heads=2,seq=4");
  const Model flash = parse_model("transformer:layers=1,hidden=8,heads=2,seq=4,attn=flash");
  EXPECT_EQ(flash.spec, "transformer:layers=1,hidden=8,heads=2,seq=4,attn=flash");
  EXPECT_EQ(naive.attention, Attention::naive);  // the transformer keeps its meaning
  const Layer& n = naive.layers[1];
  const Layer& f = flash.layers[1];
  EXPECT_EQ(n.activation_elems - f.activation_elems, 2 * 4 * 4 - 2 * 4);
  EXPECT_EQ(n.params, f.params);
  const double linears = 24.0 * 4 * 8 * 8;
  EXPECT_DOUBLE_EQ(f.fwd_flops, linears + 2 * (2.0 * 10 * 8));  // 10 = the 4 x 4 triangle
  EXPECT_DOUBLE_EQ(f.bwd_input_flops, linears + 5 * (2.0 * 10 * 8));
  EXPECT_EQ(layer_layout(flash, f).kept[layout::transformer_block::kProbs].name, "attention.lse");
}

TEST(Presets, ParameterCountsEqualThePublishedOnes) {
  ASSERT_GE(presets().size(), 6U);
  for (const Preset& preset : presets()) {
    SCOPED_TRACE(std::string(preset.name));
    const Model m = parse_model(preset.name);
    EXPECT_EQ(m.params(), preset.published_params);
    EXPECT_EQ(m.spec, preset.spec);
  }
  EXPECT_EQ(parse_model("llama3-8b").params(), 8'030'261'248);
  EXPECT_EQ(parse_model("llama3-70b").params(), 70'553'706'496);
  EXPECT_EQ(parse_model("llama3.1-405b").params(), 405'853'388'800);
  EXPECT_EQ(parse_model("dit-xl-2").params(), 675'129'632);
}

TEST(Presets, ForwardCostWithinOnePercentOfThePublishedOne) {
  int checked = 0;
  for (const Preset& preset : presets()) {
    if (preset.published_forward_macs == 0) continue;
    SCOPED_TRACE(std::string(preset.name));
    // DiT counts a multiply-add once; gpipe's FLOPs count it twice.
    const double macs = forward_flops(parse_model(preset.name)) / 2.0;
    EXPECT_NEAR(macs / preset.published_forward_macs, 1.0, 0.01);
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(Presets, TakeOverrides) {
  const Model m = parse_model("llama3-8b:seq=4096,attn=naive");
  EXPECT_EQ(m.spec,
            "llama:layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=4096,vocab=128256,attn=naive");
  EXPECT_EQ(m.params(), 8'030'261'248);  // the sequence does not change the weights
  EXPECT_EQ(parse_model("dit-xl-2:tokens=1024").seq, 1024);
}

TEST(ModelSpecErrors, NewFamiliesAndPresets) {
  using gpipe::testing::error_of;
  EXPECT_EQ(error_of([] { (void)parse_model("llama:layers=1,hidden=8,heads=4,kv_heads=3,ffn=4,seq=2,vocab=3"); }),
            "model spec 'llama:layers=1,hidden=8,heads=4,kv_heads=3,ffn=4,seq=2,vocab=3': "
            "heads=4 is not divisible by kv_heads=3");
  EXPECT_EQ(error_of([] { (void)parse_model("llama:layers=1,hidden=12,heads=4,ffn=4,seq=2,vocab=3"); }),
            "model spec 'llama:layers=1,hidden=12,heads=4,ffn=4,seq=2,vocab=3': head width "
            "hidden/heads = 3 is odd; the rotary embedding rotates pairs");
  EXPECT_EQ(error_of([] { (void)parse_model("dit:layers=1,hidden=10,heads=4,tokens=2"); }),
            "model spec 'dit:layers=1,hidden=10,heads=4,tokens=2': hidden=10 is not divisible by heads=4");
  EXPECT_EQ(error_of([] { (void)parse_model("llama3-9b"); }),
            "model spec 'llama3-9b': unknown family or preset 'llama3-9b' (families: mlp, "
            "transformer, unbalanced, llama, dit; presets: llama3-8b, llama3-70b, llama3.1-405b, "
            "llama3.2-1b, llama3.2-3b, dit-xl-2, dit-l-2, dit-b-2)");
  EXPECT_EQ(error_of([] { (void)parse_model("llama3-8b:attn=fast"); }),
            "model spec 'llama3-8b:attn=fast': key 'attn' must be flash or naive, got 'fast'");
  EXPECT_EQ(error_of([] { (void)parse_model("dit-b-2:vocab=3"); }),
            "model spec 'dit-b-2:vocab=3': unknown key 'vocab' for family 'dit' (keys: layers, "
            "hidden, heads, tokens, patch, channels, classes, attn, cache)");
  EXPECT_EQ(error_of([] { (void)parse_model("llama:layers=1,hidden=8,heads=4,seq=2,vocab=3"); }),
            "model spec 'llama:layers=1,hidden=8,heads=4,seq=2,vocab=3': missing required key 'ffn'");
  EXPECT_EQ(error_of([] { (void)parse_model("llama3-8b:tied=2"); }),
            "model spec 'llama3-8b:tied=2': key 'tied' must be 0 or 1, got '2'");
  // tied=0 is the default: the same model, and the canonical spec leaves it out.
  EXPECT_EQ(parse_model("llama3-8b:tied=0").spec, parse_model("llama3-8b").spec);
}

}  // namespace
}  // namespace gpipe::models
