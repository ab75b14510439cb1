// Dropout in the transformer family (the spec's dropout=p, models/model.hpp):
// the spec's form and its mistakes, the masks each layer keeps against
// Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, which counts them, and
// the kernels that write and read them, each worked out by hand.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "models/layer_kernels.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "tests/error_of.hpp"

namespace gpipe::models {
namespace {

constexpr const char* kGpt = "transformer:layers=2,hidden=64,heads=4,seq=32";

TEST(Dropout, TheSpecKeepsItCanonicallyAndRefusesMistakes) {
  const Model m = parse_model(std::string(kGpt) + ",dropout=0.1");
  EXPECT_EQ(m.spec, std::string(kGpt) + ",dropout=0.1");
  EXPECT_DOUBLE_EQ(m.dropout, 0.1);
  EXPECT_EQ(parse_model(m.spec), m);
  EXPECT_DOUBLE_EQ(parse_model(std::string(kGpt) + ",dropout=0.125").dropout, 0.125);
  // 0 is the default, and left out.
  EXPECT_EQ(parse_model(std::string(kGpt) + ",dropout=0").spec, kGpt);
  EXPECT_EQ(parse_model(std::string(kGpt) + ",dropout=0").dropout, 0);
  for (const char* bad : {"1", "0.1234", "-0.1", "1e-1", "0.", ".1", "0.1x", "10"}) {
    EXPECT_EQ(testing::error_of([&] { (void)parse_model(std::string(kGpt) + ",dropout=" + bad); }),
              std::string("model spec '") + kGpt + ",dropout=" + bad +
                  "': key 'dropout' must be a probability from 0 to 0.999, at most three decimals, got '" + bad + "'")
        << bad;
  }
  EXPECT_NE(testing::error_of([] { (void)parse_model("llama3-8b:dropout=0.1"); }).find("unknown key 'dropout'"), std::string::npos);
  // Module recompute keeps it.
  EXPECT_DOUBLE_EQ(with_recompute_modules(m, {.core_attn = true}).dropout, 0.1);
}

// Per sample, 16-bit (bf16), t = T: a GPT block with dropout keeps
// Korthikanti's Table 2 exactly, and the two LayerNorms' mean and rstd
// besides (8s bytes, 8s/t split over the sequence), which the table leaves
// out. No recompute: sbh(10 + 24/t + 5as/ht) without sequence parallelism,
// sbh(34/t + 5as/ht) with it; selective (core attention): sbh(10 + 24/t),
// 34sbh/t.
TEST(Dropout, ABlockKeepsKorthikantiTable2Exactly) {
  const std::int64_t s = 32, h = 64, a = 4;
  for (const int t : {1, 2, 4}) {
    for (const bool sp : {false, true}) {
      if (sp && t == 1) continue;
      const TensorParallel tp{.degree = t, .sequence_parallel = sp};
      const auto kept = [&](const std::string& extra) {
        const Model m = split_tensor_parallel(parse_model(std::string(kGpt) + ",dropout=0.1" + extra), tp);
        return bytes_at(m.layers.at(1), 1, DType::bf16).activation_bytes;
      };
      const std::int64_t stats = sp ? 8 * s / t : 8 * s;
      const std::int64_t scores = 5 * a * s * s / t;
      const std::int64_t rest = sp ? 34 * s * h / t : 10 * s * h + 24 * s * h / t;
      EXPECT_EQ(kept(""), rest + scores + stats) << t << sp;
      EXPECT_EQ(kept(",recompute=core_attn"), rest + stats) << t << sp;
    }
  }
}

TEST(Dropout, TheMasksAreBytesAndFlashKeepsNoneOfTheScores) {
  const std::int64_t s = 32, h = 64, a = 4;
  const Model none = parse_model(kGpt);
  const Model naive = parse_model(std::string(kGpt) + ",dropout=0.1");
  const Model flash = parse_model(std::string(kGpt) + ",dropout=0.1,attn=flash");
  const Model flash_none = parse_model(std::string(kGpt) + ",attn=flash");
  // Floating: the dropped probabilities; bytes: two hidden masks and P's.
  EXPECT_EQ(naive.layers[1].activation_elems - none.layers[1].activation_elems, a * s * s);
  EXPECT_EQ(naive.layers[1].activation_fixed_bytes, 2 * s * h + a * s * s);
  EXPECT_EQ(flash.layers[1].activation_elems, flash_none.layers[1].activation_elems);
  EXPECT_EQ(flash.layers[1].activation_fixed_bytes, 2 * s * h);
  // The embedding keeps its output's mask after the ids; the head nothing more.
  EXPECT_EQ(naive.layers[0].activation_fixed_bytes, 4 * s + s * h);
  EXPECT_EQ(naive.layers.back(), none.layers.back());
  // W keeps what it kept: the masked gradients in the unmasked ones' place.
  EXPECT_EQ(naive.layers[1].weight_grad_stash_elems, none.layers[1].weight_grad_stash_elems);
  EXPECT_EQ(naive.layers[1].weight_grad_stash_fixed_bytes, 0);
  // The FLOPs do not change.
  EXPECT_EQ(naive.layers[1].fwd_flops, none.layers[1].fwd_flops);
  EXPECT_EQ(naive.layers[1].bwd_input_flops, none.layers[1].bwd_input_flops);
}

// The kernels: the same GEMMs; the residual adds write the hidden masks (n h
// bytes each), dropout1' and dropout2' read a gradient and a mask and write
// the masked gradient, and naive attention adds attention_dropout (read P,
// write the dropped P and its mask) and its backward.
TEST(Dropout, TheKernelsMoveTheMasksBytes) {
  const double s = 32, h = 64, a = 4, e = 2;
  const int b = 3;
  const Model none = parse_model(kGpt);
  const Model naive = parse_model(std::string(kGpt) + ",dropout=0.1");
  const auto named = [](const std::vector<Kernel>& kernels, const std::string& name) {
    for (const Kernel& k : kernels) {
      if (k.name == name) return k;
    }
    return Kernel{.name = "missing"};
  };
  const std::vector<Kernel> with = layer_kernels(naive, naive.layers[1], b, DType::bf16);
  const std::vector<Kernel> without = layer_kernels(none, none.layers[1], b, DType::bf16);
  for (const KernelPass pass : {KernelPass::forward, KernelPass::input, KernelPass::weight}) {
    EXPECT_DOUBLE_EQ(kernel_flops(with, pass), kernel_flops(without, pass));
  }
  const double n = b * s * h;
  const double scores = b * a * s * s;
  EXPECT_DOUBLE_EQ(named(with, "residual1").bytes - named(without, "residual1").bytes, n);
  EXPECT_DOUBLE_EQ(named(with, "residual2").bytes - named(without, "residual2").bytes, n);
  EXPECT_DOUBLE_EQ(named(with, "dropout1'").bytes, 2 * n * e + n);
  EXPECT_DOUBLE_EQ(named(with, "dropout2'").bytes, 2 * n * e + n);
  EXPECT_DOUBLE_EQ(named(with, "attention_dropout").bytes, 2 * scores * e + scores);
  EXPECT_DOUBLE_EQ(named(with, "attention_dropout'").bytes, 2 * scores * e + scores);
  EXPECT_EQ(with.size(), without.size() + 4);
  // The embedding writes its mask forward and reads it in the scatter-add.
  const std::vector<Kernel> embed = layer_kernels(naive, naive.layers[0], b, DType::bf16);
  const std::vector<Kernel> embed_none = layer_kernels(none, none.layers[0], b, DType::bf16);
  EXPECT_DOUBLE_EQ(named(embed, "gather").bytes - named(embed_none, "gather").bytes, n);
  EXPECT_DOUBLE_EQ(named(embed, "scatter_add").bytes - named(embed_none, "scatter_add").bytes, n);
}

}  // namespace
}  // namespace gpipe::models
