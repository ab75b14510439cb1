// The CPU layers' forwards against a plain double-precision reference written
// from models/model.hpp's formulas (loops, no BLAS), with parameters redrawn
// away from the near-linear GPT-2 init. Tolerance: max abs error <= 1e-4 on
// outputs of order 1 (fp32 against double); the errors are printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string_view>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

using Mat = std::vector<double>;  // row-major
constexpr double kTolerance = 1e-4;

Mat to_mat(std::span<const float> v) { return {v.begin(), v.end()}; }

const Parameter& param(const Layer& layer, std::string_view name) {
  for (const Parameter& p : layer.parameters()) {
    if (p.name == name) return p;
  }
  throw std::logic_error("no parameter " + std::string(name));
}

void randomize(Layer& layer, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (Parameter& p : layer.parameters()) {
    const bool gamma = p.name.find("gamma") != std::string::npos;
    for (float& v : p.value.f32()) v = (gamma ? 1.0F : 0.0F) + 0.3F * normal(rng);
  }
}

Mat layernorm(const Mat& x, std::size_t width, const Parameter& gamma, const Parameter& beta) {
  Mat y(x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    double mean = 0;
    for (std::size_t j = 0; j < width; ++j) mean += x[r * width + j] / width;
    double var = 0;
    for (std::size_t j = 0; j < width; ++j) var += std::pow(x[r * width + j] - mean, 2) / width;
    for (std::size_t j = 0; j < width; ++j) {
      y[r * width + j] = (x[r * width + j] - mean) / std::sqrt(var + 1e-5) * gamma.value.f32()[j] +
                         beta.value.f32()[j];
    }
  }
  return y;
}

// y = x W^T + b, W [out, in].
Mat linear(const Mat& x, const Parameter& w, const Parameter* b) {
  const std::size_t out = static_cast<std::size_t>(w.value.dim(0));
  const std::size_t in = static_cast<std::size_t>(w.value.dim(1));
  Mat y(x.size() / in * out);
  for (std::size_t r = 0; r < x.size() / in; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double sum = b != nullptr ? b->value.f32()[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i) sum += x[r * in + i] * w.value.f32()[o * in + i];
      y[r * out + o] = sum;
    }
  }
  return y;
}

Mat gelu(Mat x) {
  for (double& v : x)
    v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  return x;
}

Mat add(Mat a, const Mat& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// Causal attention over qkv [b, S, 3H] -> [b, S, H].
Mat attention(const Mat& qkv, std::size_t b, std::size_t s, std::size_t h, std::size_t heads) {
  const std::size_t d = h / heads;
  Mat out(b * s * h);
  auto at = [&](std::size_t n, std::size_t t, std::size_t part, std::size_t a, std::size_t e) {
    return qkv[(n * s + t) * 3 * h + part * h + a * d + e];
  };
  for (std::size_t n = 0; n < b; ++n) {
    for (std::size_t a = 0; a < heads; ++a) {
      for (std::size_t i = 0; i < s; ++i) {
        std::vector<double> p(i + 1);
        double max = -1e300;
        for (std::size_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::size_t e = 0; e < d; ++e) dot += at(n, i, 0, a, e) * at(n, j, 1, a, e);
          p[j] = dot / std::sqrt(static_cast<double>(d));
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (double& v : p) sum += (v = std::exp(v - max));
        for (std::size_t e = 0; e < d; ++e) {
          double acc = 0;
          for (std::size_t j = 0; j <= i; ++j) acc += p[j] / sum * at(n, j, 2, a, e);
          out[(n * s + i) * h + a * d + e] = acc;
        }
      }
    }
  }
  return out;
}

void expect_close(const std::string& what, std::span<const float> got, const Mat& expected) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  double max_abs = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    max_abs = std::max(max_abs, std::abs(got[i] - expected[i]));
  std::printf("  %-18s max abs err %.3e over %zu values\n", what.c_str(), max_abs, got.size());
  EXPECT_LE(max_abs, kTolerance) << what;
}

struct Forwarded {
  std::unique_ptr<Layer> layer;
  Tensor input;
  Tensor target;
  Tensor output;
};

Forwarded run(const cases::LayerCase& c, std::int64_t b) {
  std::mt19937 rng(21);
  Forwarded r{make_layer(c.model, c.index, 4),
              cases::random_input(c, b, rng),
              cases::random_target(c, b, rng),
              {}};
  randomize(*r.layer, rng);
  Stash stash;
  r.output =
      r.layer->forward(r.input.clone(), r.target.empty() ? nullptr : &r.target, stash, nullptr);
  return r;
}

const cases::LayerCase& case_of(std::string_view label) {
  static const std::vector<cases::LayerCase> all = cases::layer_cases();
  for (const auto& c : all) {
    if (c.label == label) return c;
  }
  throw std::logic_error("no case " + std::string(label));
}

TEST(CpuReference, MlpBlock) {
  for (const char* label : {"mlp_block", "mlp_block_wide"}) {
    Forwarded r = run(case_of(label), 3);
    const Layer& l = *r.layer;
    const Mat x = to_mat(r.input.f32());
    const Mat hidden = gelu(linear(layernorm(x, 8, param(l, "ln.gamma"), param(l, "ln.beta")),
                                   param(l, "w1"), &param(l, "c1")));
    expect_close(label, r.output.f32(), add(x, linear(hidden, param(l, "w2"), &param(l, "c2"))));
  }
}

TEST(CpuReference, Embedding) {
  const auto& c = case_of("embedding");
  Forwarded r = run(c, 3);
  const std::size_t h = 8;
  const std::size_t s = 4;
  Mat expected(3 * s * h);
  for (std::size_t i = 0; i < 3 * s; ++i) {
    const auto id = static_cast<std::size_t>(r.input.i32()[i]);
    for (std::size_t j = 0; j < h; ++j) {
      expected[i * h + j] = static_cast<double>(param(*r.layer, "tok").value.f32()[id * h + j]) +
                            param(*r.layer, "pos").value.f32()[(i % s) * h + j];
    }
  }
  expect_close("embedding", r.output.f32(), expected);
}

TEST(CpuReference, TransformerBlock) {
  Forwarded r = run(case_of("transformer_block"), 3);
  const Layer& l = *r.layer;
  const Mat x = to_mat(r.input.f32());
  const Mat qkv = linear(layernorm(x, 8, param(l, "ln1.gamma"), param(l, "ln1.beta")),
                         param(l, "wqkv"), &param(l, "bqkv"));
  const Mat a = add(x, linear(attention(qkv, 3, 4, 8, 2), param(l, "wo"), &param(l, "bo")));
  const Mat hidden = gelu(linear(layernorm(a, 8, param(l, "ln2.gamma"), param(l, "ln2.beta")),
                                 param(l, "w1"), &param(l, "b1")));
  expect_close("transformer_block", r.output.f32(),
               add(a, linear(hidden, param(l, "w2"), &param(l, "b2"))));
}

TEST(CpuReference, LmHead) {
  Forwarded r = run(case_of("lm_head"), 3);
  const Layer& l = *r.layer;
  const std::size_t s = 4;
  const std::size_t v = 11;
  const Mat logits =
      linear(layernorm(to_mat(r.input.f32()), 8, param(l, "ln.gamma"), param(l, "ln.beta")),
             param(l, "wu"), nullptr);
  Mat loss(3, 0.0);
  for (std::size_t row = 0; row < 3 * s; ++row) {
    double sum = 0;
    for (std::size_t j = 0; j < v; ++j) sum += std::exp(logits[row * v + j]);
    const auto t = static_cast<std::size_t>(r.target.i32()[row]);
    loss[row / s] += (std::log(sum) - logits[row * v + t]) / s;
  }
  expect_close("lm_head", r.output.f32(), loss);
}

}  // namespace
}  // namespace gpipe::exec::cpu
