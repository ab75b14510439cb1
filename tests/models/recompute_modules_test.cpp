// Module recompute (models/recompute_modules.hpp, the spec's recompute=):
// the spec's form and its mistakes, what each module takes out of a block's
// stash against Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, the FLOPs
// the backward adds, the kernels that run them and the collective of the MLP
// run again, each worked out by hand.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "models/layer_kernels.hpp"
#include "models/model_spec.hpp"
#include "models/recompute_modules.hpp"
#include "models/tensor_parallel.hpp"

namespace gpipe::models {
namespace {

constexpr const char* kGptSpec = "transformer:layers=2,hidden=64,heads=4,seq=32";
constexpr const char* kLlamaSpec = "llama:layers=2,hidden=64,heads=4,kv_heads=2,ffn=96,seq=32,vocab=100";

const Layer& first_block(const Model& m) { return m.layers.at(1); }

std::string spec_error(const std::string& spec) {
  try {
    (void)parse_model(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RecomputeModules, NamesParseInAnyOrderAndPrintInOne) {
  EXPECT_EQ(parse_recompute_modules("mlp+core_attn"), (RecomputeModules{.core_attn = true, .mlp = true}));
  EXPECT_EQ(to_string(*parse_recompute_modules("layernorm+mlp+core_attn")), "core_attn+mlp+layernorm");
  EXPECT_EQ(parse_recompute_modules("mlp+mlp"), std::nullopt);
  EXPECT_EQ(parse_recompute_modules("attn"), std::nullopt);
  EXPECT_EQ(parse_recompute_modules(""), std::nullopt);
  EXPECT_EQ(parse_recompute_modules("mlp+"), std::nullopt);
  for (int bits = 0; bits < 8; ++bits) EXPECT_EQ(to_bits(from_bits(bits)), bits);
}

TEST(RecomputeModules, TheSpecKeepsItCanonicallyAndRefusesMistakes) {
  const Model m = parse_model(std::string(kGptSpec) + ",recompute=mlp+core_attn");
  EXPECT_EQ(m.spec, std::string(kGptSpec) + ",recompute=core_attn+mlp");
  EXPECT_EQ(m.recompute_modules, (RecomputeModules{.core_attn = true, .mlp = true}));
  EXPECT_EQ(parse_model(m.spec), m);
  EXPECT_EQ(parse_model("llama3-8b:recompute=layernorm").recompute_modules, RecomputeModules{.layernorm = true});
  EXPECT_EQ(spec_error(std::string(kGptSpec) + ",recompute=attention"),
            std::string("model spec '") + kGptSpec +
                ",recompute=attention': key 'recompute' must be modules joined by '+', each once (core_attn, mlp, "
                "layernorm), got 'attention'");
  EXPECT_NE(spec_error("mlp:layers=2,hidden=8,recompute=mlp").find("unknown key 'recompute'"), std::string::npos);
}

// Per sample, 16-bit (bf16), t = T: a GPT block without sequence
// parallelism keeps 8sh + 24sh/t + 2as^2/t + 8s bytes (x, ln1, a, ln2 whole;
// qkv, attention out, pre-GELU and GELU split; P split by heads; two
// LayerNorms' mean and rstd). Korthikanti's Table 2 row "no recompute" is
// sbh(10 + 24/t + 5as/ht): gpipe keeps no dropout masks, 2sbh of the 10 and
// 3as^2b of the 5 (the attention's mask and its output). Selective recompute
// takes out exactly the 2as^2/t left: Table 2's "selective" row is
// sbh(10 + 24/t), less the two masks; with sequence parallelism 34sbh/t,
// less the two masks split: 32sh/t + 8s/t.
TEST(RecomputeModules, CoreAttentionTakesOutTheScoresAsKorthikantiTable2Has) {
  const std::int64_t s = 32, h = 64, a = 4;
  for (const int t : {1, 2, 4}) {
    for (const bool sp : {false, true}) {
      if (sp && t == 1) continue;
      const TensorParallel tp{.degree = t, .sequence_parallel = sp};
      const Layer never = first_block(split_tensor_parallel(parse_model(kGptSpec), tp));
      const Layer selective = first_block(split_tensor_parallel(parse_model(std::string(kGptSpec) + ",recompute=core_attn"), tp));
      const std::int64_t kept = bytes_at(selective, 1, DType::bf16).activation_bytes;
      EXPECT_EQ(bytes_at(never, 1, DType::bf16).activation_bytes - kept, 2 * a * s * s / t) << t << sp;
      EXPECT_EQ(kept, sp ? (32 * s * h + 8 * s) / t : 8 * s * h + 24 * s * h / t + 8 * s) << t << sp;
    }
  }
}

TEST(RecomputeModules, MlpAndLayernormTakeOutTheirTensors) {
  const std::int64_t s = 32, h = 64, f = 4 * h;
  const auto elems = [](const std::string& spec) { return first_block(parse_model(spec)).activation_elems; };
  const std::int64_t never = elems(kGptSpec);
  EXPECT_EQ(never - elems(std::string(kGptSpec) + ",recompute=mlp"), 2 * s * f);             // pre-GELU, GELU
  EXPECT_EQ(never - elems(std::string(kGptSpec) + ",recompute=layernorm"), 2 * s * h + 4 * s);  // outputs, stats
  const std::int64_t lf = 96;
  const std::int64_t llama = elems(kLlamaSpec);
  EXPECT_EQ(llama - elems(std::string(kLlamaSpec) + ",recompute=mlp"), 3 * s * lf);  // gate, up, silu(gate) up
  EXPECT_EQ(llama - elems(std::string(kLlamaSpec) + ",recompute=layernorm"), 2 * s * h + 2 * s);
  EXPECT_EQ(llama - elems(std::string(kLlamaSpec) + ",recompute=core_attn"), 4 * s);  // the log-sum-exp [A,S]
  // The other layers keep what they kept.
  const Model all = parse_model(std::string(kLlamaSpec) + ",recompute=core_attn+mlp+layernorm");
  EXPECT_EQ(all.layers.front(), parse_model(kLlamaSpec).layers.front());
  EXPECT_EQ(all.layers.back(), parse_model(kLlamaSpec).layers.back());
}

// The backward adds the modules' forwards: the attention core's 4s^2h
// (naive: q k^T and P v), the MLP's W1 and W2 (16sh^2; llama's gate, up and
// down 6shF), the norms none. Split over T by T; the kernels sum to them.
TEST(RecomputeModules, TheBackwardAddsTheModulesForwardFlopsAndKernels) {
  const double s = 32, h = 64;
  const auto input = [](const std::string& spec, int t) {
    return first_block(split_tensor_parallel(parse_model(spec), {.degree = t})).bwd_input_flops;
  };
  for (const int t : {1, 2}) {
    const double never = input(kGptSpec, t);
    EXPECT_DOUBLE_EQ(input(std::string(kGptSpec) + ",recompute=core_attn", t) - never, 4 * s * s * h / t);
    EXPECT_DOUBLE_EQ(input(std::string(kGptSpec) + ",recompute=mlp", t) - never, 16 * s * h * h / t);
    EXPECT_DOUBLE_EQ(input(std::string(kGptSpec) + ",recompute=layernorm", t), never);
    EXPECT_DOUBLE_EQ(input(std::string(kLlamaSpec) + ",recompute=mlp", t) - input(kLlamaSpec, t), 6 * s * h * 96 / t);
  }
  for (const std::string& spec : {std::string(kGptSpec), std::string(kLlamaSpec)}) {
    const Model m = split_tensor_parallel(parse_model(spec + ",recompute=core_attn+mlp+layernorm"), {.degree = 2});
    for (const int b : {1, 3}) {
      const std::vector<Kernel> kernels = layer_kernels(m, first_block(m), b, DType::bf16);
      EXPECT_DOUBLE_EQ(kernel_flops(kernels, KernelPass::input), b * first_block(m).bwd_input_flops) << spec;
      int again = 0;
      for (const Kernel& k : kernels) again += k.name.ends_with(" again") && k.pass == KernelPass::input;
      // norm1, norm2, the MLP's three (GEMM, activation, GEMM), the attention
      // core's one (llama's flash) or three (GPT's naive: two products, softmax).
      EXPECT_EQ(again, spec == kGptSpec ? 2 + 3 + 3 : 2 + 3 + 1) << spec;
    }
  }
}

TEST(RecomputeModules, TheMlpRunAgainReducesOverTheGroup) {
  const std::int64_t e = 32 * 64;
  for (const bool sp : {false, true}) {
    const TensorParallel tp{.degree = 2, .sequence_parallel = sp};
    const Layer never = first_block(split_tensor_parallel(parse_model(kGptSpec), tp));
    const Layer mlp = first_block(split_tensor_parallel(parse_model(std::string(kGptSpec) + ",recompute=mlp"), tp));
    const Layer attn = first_block(split_tensor_parallel(parse_model(std::string(kGptSpec) + ",recompute=core_attn"), tp));
    EXPECT_EQ(attn.collectives, never.collectives);
    for (const Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
      const std::int64_t added = collective_elems(mlp, TensorParallelPass::input, c) -
                                 collective_elems(never, TensorParallelPass::input, c);
      EXPECT_EQ(added, (sp ? c != Collective::all_reduce : c == Collective::all_reduce) ? e : 0) << sp;
    }
  }
}

}  // namespace
}  // namespace gpipe::models
