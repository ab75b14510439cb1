// The row and elementwise kernels of Llama and DiT blocks: RMSNorm, RoPE,
// SwiGLU and SiLU, adaLN's modulation and gated residual, the timestep
// embedding, and LayerNorm without affine. Each forward against a plain
// double-precision reference, each backward against central differences of
// that reference (or its closed form where it is linear), with the tolerances
// stated; and the kernels that split over a rank's team give bit for bit the
// same at team sizes 1 and 2.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/modulation.hpp"
#include "exec/cpu/ops/rmsnorm.hpp"
#include "exec/cpu/ops/rope.hpp"
#include "exec/cpu/ops/swiglu.hpp"

namespace gpipe::exec::cpu {
namespace {

using Floats = std::vector<float>;
using Doubles = std::vector<double>;

Floats random_normal(std::size_t count, std::mt19937& rng, float stddev = 1.0F) {
  std::normal_distribution<float> normal(0.0F, stddev);
  Floats v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

Doubles to_double(const Floats& v) { return {v.begin(), v.end()}; }

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Bit for bit (EXPECT_EQ on floats would take -0 for +0 and fail on NaN).
bool same_bits(const Floats& a, const Floats& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  }
  return true;
}

// d f / d v[k] by central differences, f evaluated in double.
template <class F>
double central_difference(F&& f, Doubles& v, std::size_t k, double h = 1e-5) {
  const double saved = v[k];
  v[k] = saved + h;
  const double up = f();
  v[k] = saved - h;
  const double down = f();
  v[k] = saved;
  return (up - down) / (2 * h);
}

double dot(const Doubles& a, const Doubles& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Runs `body` on a team of `size` threads (compute_team_test's way in) and
// returns what it returns.
template <class Body>
auto on_team(int size, Body&& body) {
  ComputeTeam team(size);
  const ComputeTeam::Scope scope(&team);
  return body();
}

// True where a team of 2 splits `work` elements in two, so that a team test
// compares a split run with an unsplit one.
bool splits_in_two(std::int64_t work) {
  return on_team(2, [&] { return parts_for(work, kMinElementsPerPart) == 2; });
}

// ---------------------------------------------------------------- RMSNorm

Doubles rmsnorm_reference(std::int64_t rows, std::int64_t width, const Doubles& x,
                          const Doubles& gamma, Doubles* rstd = nullptr) {
  Doubles y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (std::int64_t j = 0; j < width; ++j) squares += x[at(r * width + j)] * x[at(r * width + j)];
    const double s = 1.0 / std::sqrt(squares / static_cast<double>(width) + kRmsNormEps);
    if (rstd != nullptr) rstd->push_back(s);
    for (std::int64_t j = 0; j < width; ++j)
      y[at(r * width + j)] = x[at(r * width + j)] * s * gamma[at(j)];
  }
  return y;
}

TEST(CpuRmsNorm, ForwardMatchesDoubleReferenceWithOneRstdPerRow) {
  const std::int64_t rows = 5;
  const std::int64_t width = 37;  // not a multiple of any vector width
  std::mt19937 rng(1);
  const Floats x = random_normal(at(rows * width), rng, 2.0F);
  const Floats gamma = random_normal(at(width), rng);
  Floats y(x.size());
  const float sentinel = -123.0F;
  Floats rstd(at(rows + 1), sentinel);  // one more than it may write
  rmsnorm_forward(rows, width, x.data(), gamma.data(), y.data(), rstd.data());
  Doubles ref_rstd;
  const Doubles ref = rmsnorm_reference(rows, width, to_double(x), to_double(gamma), &ref_rstd);
  // Tolerance: float sums of 37 squares and three roundings per output.
  for (std::int64_t r = 0; r < rows; ++r)
    EXPECT_NEAR(rstd[at(r)], ref_rstd[at(r)], 1e-6 * ref_rstd[at(r)]) << r;
  EXPECT_EQ(rstd[at(rows)], sentinel) << "rstd is [rows]: one float per row";
  for (std::size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << i;
}

TEST(CpuRmsNorm, BackwardMatchesFiniteDifferencesAndAdds) {
  const std::int64_t rows = 3;
  const std::int64_t width = 21;
  std::mt19937 rng(2);
  const Floats x = random_normal(at(rows * width), rng);
  const Floats gamma = random_normal(at(width), rng);
  const Floats dy = random_normal(at(rows * width), rng);
  Floats y(x.size());
  Floats rstd(at(rows));
  rmsnorm_forward(rows, width, x.data(), gamma.data(), y.data(), rstd.data());
  const float dx0 = 0.25F;  // what dx and dgamma held before: the kernel adds to it
  const float dgamma0 = -0.5F;
  Floats dx(x.size(), dx0);
  Floats dgamma(gamma.size(), dgamma0);
  rmsnorm_backward(rows, width, x.data(), rstd.data(), gamma.data(), dy.data(), dx.data(),
                   dgamma.data());
  // loss = sum(dy * y), so d loss / d input is the backward's output.
  Doubles xd = to_double(x);
  Doubles gd = to_double(gamma);
  const Doubles w = to_double(dy);
  const auto loss = [&] { return dot(w, rmsnorm_reference(rows, width, xd, gd)); };
  // Tolerance: the float kernel's rounding (~1e-6 relative) on gradients of order 1.
  for (std::size_t k = 0; k < xd.size(); ++k) {
    EXPECT_NEAR(dx[k] - dx0, central_difference(loss, xd, k), 2e-5) << "dx " << k;
  }
  for (std::size_t k = 0; k < gd.size(); ++k) {
    EXPECT_NEAR(dgamma[k] - dgamma0, central_difference(loss, gd, k), 2e-5) << "dgamma " << k;
  }
}

TEST(CpuRmsNorm, ForwardIsTheSameOnATeamOfTwo) {
  const std::int64_t rows = 512;
  const std::int64_t width = 384;
  ASSERT_TRUE(splits_in_two(rows * width));
  std::mt19937 rng(3);
  const Floats x = random_normal(at(rows * width), rng);
  const Floats gamma = random_normal(at(width), rng);
  const auto run = [&] {
    Floats y(x.size());
    Floats rstd(at(rows));
    rmsnorm_forward(rows, width, x.data(), gamma.data(), y.data(), rstd.data());
    y.insert(y.end(), rstd.begin(), rstd.end());
    return y;
  };
  EXPECT_TRUE(same_bits(on_team(1, run), on_team(2, run)));
}

// ---------------------------------------------------------------- RoPE

// Sample n, token s, head h, pair i of a buffer laid out as RopeShape says.
std::size_t rope_index(const RopeShape& r, std::int64_t n, std::int64_t s, std::int64_t h,
                       std::int64_t i) {
  return at((n * r.seq + s) * r.row_stride + h * r.head_dim + 2 * i);
}

// A [b, S, 4 heads of d] buffer in which the middle two heads are rotated (x
// points one head in, heads 2): the heads around them must stay untouched.
struct RopeCase {
  RopeShape shape{
      .batch = 2, .seq = 6, .heads = 2, .head_dim = 8, .row_stride = 4 * 8, .theta = 10000.0};
  std::int64_t offset = 8;  // x = buffer + one head
  Floats buffer;
  explicit RopeCase(unsigned seed) {
    std::mt19937 rng(seed);
    buffer = random_normal(at(shape.batch * shape.seq * shape.row_stride), rng);
  }
  float* x() { return buffer.data() + offset; }
};

TEST(CpuRope, ForwardRotatesPairsByMetasAnglesAndNothingElse) {
  RopeCase c(4);
  const Floats before = c.buffer;
  rope_forward(c.shape, c.x());
  const RopeShape& r = c.shape;
  std::vector<bool> rotated(c.buffer.size(), false);
  for (std::int64_t n = 0; n < r.batch; ++n) {
    for (std::int64_t s = 0; s < r.seq; ++s) {
      for (std::int64_t h = 0; h < r.heads; ++h) {
        for (std::int64_t i = 0; i < r.head_dim / 2; ++i) {
          const std::size_t k = at(c.offset) + rope_index(r, n, s, h, i);
          const double angle =
              static_cast<double>(s) *
              std::pow(r.theta, -2.0 * static_cast<double>(i) / static_cast<double>(r.head_dim));
          const double a = before[k];
          const double b = before[k + 1];
          // Tolerance: cos/sin rounded to float, then two products and a sum.
          EXPECT_NEAR(c.buffer[k], a * std::cos(angle) - b * std::sin(angle),
                      1e-6 * (std::fabs(a) + std::fabs(b)));
          EXPECT_NEAR(c.buffer[k + 1], a * std::sin(angle) + b * std::cos(angle),
                      1e-6 * (std::fabs(a) + std::fabs(b)));
          rotated[k] = rotated[k + 1] = true;
        }
      }
    }
  }
  for (std::size_t k = 0; k < c.buffer.size(); ++k) {
    if (!rotated[k]) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(c.buffer[k]), std::bit_cast<std::uint32_t>(before[k]))
          << k;
    }
  }
}

TEST(CpuRope, MetasInterleavedConventionOnAHandComputedValue) {
  // d = 4, theta 10^4, position 1: pair 0 turns by 1 rad, pair 1 by 10^4^(-2/4) = 0.01 rad.
  // Interleaved pairs are (x0, x1) and (x2, x3); the half-split (GPT-NeoX) form
  // would pair (x0, x2) and (x1, x3) and put the values elsewhere.
  const RopeShape shape{
      .batch = 1, .seq = 2, .heads = 1, .head_dim = 4, .row_stride = 4, .theta = 10000.0};
  Floats x = {0, 0, 0, 0, /* position 1: */ 0, 1, 1, 0};
  rope_forward(shape, x.data());
  EXPECT_NEAR(x[4], -0.8414709848078965, 1e-7);   // -sin(1)
  EXPECT_NEAR(x[5], 0.5403023058681398, 1e-7);    // cos(1)
  EXPECT_NEAR(x[6], 0.9999500004166653, 1e-7);    // cos(0.01)
  EXPECT_NEAR(x[7], 0.009999833334166664, 1e-9);  // sin(0.01)
}

TEST(CpuRope, PositionZeroIsUnchangedExactly) {
  RopeCase c(5);
  const Floats before = c.buffer;
  rope_forward(c.shape, c.x());
  const RopeShape& r = c.shape;
  for (std::int64_t n = 0; n < r.batch; ++n) {
    for (std::int64_t h = 0; h < r.heads; ++h) {
      for (std::int64_t i = 0; i < r.head_dim / 2; ++i) {
        const std::size_t k = at(c.offset) + rope_index(r, n, 0, h, i);
        EXPECT_EQ(c.buffer[k], before[k]);
        EXPECT_EQ(c.buffer[k + 1], before[k + 1]);
      }
    }
  }
  // And a later position does move (the check above could not pass by doing nothing).
  const std::size_t later = at(c.offset) + rope_index(r, 0, 1, 0, 0);
  EXPECT_NE(c.buffer[later], before[later]);
}

TEST(CpuRope, RotationKeepsEachPairsNorm) {
  RopeCase c(6);
  const Floats before = c.buffer;
  rope_forward(c.shape, c.x());
  const RopeShape& r = c.shape;
  for (std::int64_t n = 0; n < r.batch; ++n) {
    for (std::int64_t s = 0; s < r.seq; ++s) {
      for (std::int64_t h = 0; h < r.heads; ++h) {
        for (std::int64_t i = 0; i < r.head_dim / 2; ++i) {
          const std::size_t k = at(c.offset) + rope_index(r, n, s, h, i);
          const double was = std::hypot(double{before[k]}, double{before[k + 1]});
          const double now = std::hypot(double{c.buffer[k]}, double{c.buffer[k + 1]});
          EXPECT_NEAR(now, was, 1e-6 * (1 + was));
        }
      }
    }
  }
}

TEST(CpuRope, BackwardUndoesForward) {
  RopeCase c(7);
  c.shape.seq = 300;  // angles up to 299 rad: the inverse must use the same table
  std::mt19937 rng(7);
  c.buffer = random_normal(at(c.shape.batch * c.shape.seq * c.shape.row_stride), rng);
  const Floats before = c.buffer;
  rope_forward(c.shape, c.x());
  EXPECT_FALSE(same_bits(c.buffer, before));
  rope_backward(c.shape, c.x());
  for (std::size_t k = 0; k < before.size(); ++k)
    EXPECT_NEAR(c.buffer[k], before[k], 1e-6 * (1 + std::fabs(before[k]))) << k;
}

TEST(CpuRope, BackwardIsTheTransposeOfForward) {
  // <R x, g> = <x, R^T g> for random x and g: the backward is the gradient.
  RopeCase xc(8);
  RopeCase gc(9);
  const Floats x = xc.buffer;
  const Floats g = gc.buffer;
  rope_forward(xc.shape, xc.x());
  rope_backward(gc.shape, gc.x());
  EXPECT_NEAR(dot(to_double(xc.buffer), to_double(g)), dot(to_double(x), to_double(gc.buffer)),
              1e-4);
}

TEST(CpuRope, TheSameOnATeamOfTwo) {
  const RopeShape shape{.batch = 4,
                        .seq = 256,
                        .heads = 4,
                        .head_dim = 64,
                        .row_stride = 3 * 4 * 64,
                        .theta = 500000.0};
  ASSERT_TRUE(splits_in_two(shape.batch * shape.seq * shape.heads * shape.head_dim));
  std::mt19937 rng(10);
  const Floats x = random_normal(at(shape.batch * shape.seq * shape.row_stride), rng);
  const auto run = [&] {
    Floats y = x;
    rope_forward(shape, y.data() + 4 * 64);  // k of a fused QKV
    Floats back = y;
    rope_backward(shape, back.data() + 4 * 64);
    y.insert(y.end(), back.begin(), back.end());
    return y;
  };
  EXPECT_TRUE(same_bits(on_team(1, run), on_team(2, run)));
}

// ---------------------------------------------------------------- SwiGLU, SiLU

double silu_reference(double v) { return v / (1 + std::exp(-v)); }

// Normal values plus the tails: 0, moderate, and far beyond where exp clamps.
Floats gate_values(std::mt19937& rng) {
  Floats g = random_normal(200, rng, 4.0F);
  const float extremes[] = {0.0F,   1.0F,   -1.0F,   20.0F, -20.0F, 86.0F, -86.0F, 88.0F,
                            -88.0F, 100.0F, -100.0F, 1e30F, -1e30F, 2e38F, -3e38F};
  g.insert(g.end(), std::begin(extremes), std::end(extremes));
  return g;
}

TEST(CpuSwiGlu, ForwardMatchesDoubleReferenceIncludingTheTails) {
  std::mt19937 rng(11);
  const Floats gate = gate_values(rng);
  Floats up = random_normal(gate.size(), rng);
  up.back() = up[up.size() - 2] = 1.5F;  // so that h = 2e38 * up stays below FLT_MAX
  const auto count = static_cast<std::int64_t>(gate.size());
  Floats h(gate.size());
  Floats y(gate.size());
  swiglu_forward(count, gate.data(), up.data(), h.data());
  silu_forward(count, gate.data(), y.data());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const double s = silu_reference(gate[i]);
    // Tolerance: sigmoid_approx's polynomial and division, a few float ulps.
    EXPECT_NEAR(y[i], s, 1e-6 * (1 + std::fabs(s))) << "silu(" << gate[i] << ")";
    EXPECT_NEAR(h[i], s * up[i], 1e-6 * (1 + std::fabs(s * up[i]))) << "swiglu(" << gate[i] << ")";
    EXPECT_TRUE(std::isfinite(h[i])) << gate[i];
  }
  // The far negative tail is 0, not g * e^-87 (which is -4.9 at g = -3e38).
  EXPECT_EQ(y[gate.size() - 1], 0.0F);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  silu_forward(1, &nan, y.data());
  EXPECT_TRUE(std::isnan(y[0]));
}

TEST(CpuSwiGlu, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(12);
  const Floats gate = random_normal(300, rng, 4.0F);
  const Floats up = random_normal(gate.size(), rng);
  const Floats dh = random_normal(gate.size(), rng);
  const auto count = static_cast<std::int64_t>(gate.size());
  Floats dgate(gate.size());
  Floats dup(gate.size());
  swiglu_backward(count, gate.data(), up.data(), dh.data(), dgate.data(), dup.data());
  Floats dx(gate.size());
  silu_backward(count, gate.data(), dh.data(), dx.data());
  Doubles gd = to_double(gate);
  Doubles ud = to_double(up);
  for (std::size_t i = 0; i < gate.size(); ++i) {
    // Elementwise, so each element's derivative is that of a scalar function.
    const auto h = [&] { return silu_reference(gd[i]) * ud[i]; };
    const double dgate_ref = dh[i] * central_difference(h, gd, i);
    const double dup_ref = dh[i] * central_difference(h, ud, i);
    const double dx_ref = dh[i] * central_difference([&] { return silu_reference(gd[i]); }, gd, i);
    // Tolerance: float rounding of outputs of order |dh| (1 + |g|).
    const double tol = 2e-6 * (1 + std::fabs(dgate_ref) + std::fabs(dup_ref));
    EXPECT_NEAR(dgate[i], dgate_ref, tol) << gate[i];
    EXPECT_NEAR(dup[i], dup_ref, tol) << gate[i];
    EXPECT_NEAR(dx[i], dx_ref, tol) << gate[i];
  }
}

TEST(CpuSwiGlu, BackwardTailsAreFiniteAndAtTheirLimits) {
  // silu'(g) -> 1 as g -> +inf and -> 0 as g -> -inf.
  const Floats gate = {30.0F, 1e30F, 3e38F, -30.0F, -100.0F, -1e30F, -3e38F};
  const Floats up(gate.size(), 2.0F);
  const Floats dh(gate.size(), 1.0F);
  Floats dgate(gate.size());
  Floats dup(gate.size());
  swiglu_backward(static_cast<std::int64_t>(gate.size()), gate.data(), up.data(), dh.data(),
                  dgate.data(), dup.data());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(dgate[i], 2.0, 1e-6) << gate[i];
    EXPECT_EQ(dup[i], gate[i]) << gate[i];
  }
  // Near 0 from -30 on (-5e-12 at -30), and exact zeros at -1e30 and -3e38,
  // where the clamped exp alone would give dgate -3.3e-8 and -9.9.
  for (std::size_t i = 3; i < gate.size(); ++i) {
    EXPECT_NEAR(dgate[i], 0.0, 1e-10) << gate[i];
    EXPECT_NEAR(dup[i], 0.0, 1e-10) << gate[i];
  }
  EXPECT_EQ(dgate[6], 0.0F);
  EXPECT_EQ(dup[6], 0.0F);
}

TEST(CpuSwiGlu, GradientsMayTakeTheInputsStorage) {
  std::mt19937 rng(13);
  const Floats gate = random_normal(101, rng, 3.0F);
  const Floats up = random_normal(gate.size(), rng);
  const Floats dh = random_normal(gate.size(), rng);
  const auto count = static_cast<std::int64_t>(gate.size());
  Floats dgate(gate.size());
  Floats dup(gate.size());
  swiglu_backward(count, gate.data(), up.data(), dh.data(), dgate.data(), dup.data());
  Floats g = gate;
  Floats u = up;
  swiglu_backward(count, g.data(), u.data(), dh.data(), g.data(), u.data());
  EXPECT_TRUE(same_bits(g, dgate));
  EXPECT_TRUE(same_bits(u, dup));
  // SiLU's dx into x's storage, and into dy's.
  Floats dx(gate.size());
  silu_backward(count, gate.data(), dh.data(), dx.data());
  Floats in_x = gate;
  silu_backward(count, in_x.data(), dh.data(), in_x.data());
  Floats in_dy = dh;
  silu_backward(count, gate.data(), in_dy.data(), in_dy.data());
  EXPECT_TRUE(same_bits(in_x, dx));
  EXPECT_TRUE(same_bits(in_dy, dx));
}

TEST(CpuSwiGlu, TheSameOnATeamOfTwo) {
  const std::int64_t count = 2 * kMinElementsPerPart + 13;
  ASSERT_TRUE(splits_in_two(count));
  std::mt19937 rng(14);
  const Floats gate = random_normal(at(count), rng, 3.0F);
  const Floats up = random_normal(at(count), rng);
  const Floats dh = random_normal(at(count), rng);
  const auto run = [&] {
    Floats out(at(5 * count));
    float* h = out.data();
    swiglu_forward(count, gate.data(), up.data(), h);
    swiglu_backward(count, gate.data(), up.data(), dh.data(), h + count, h + 2 * count);
    silu_forward(count, gate.data(), h + 3 * count);
    silu_backward(count, gate.data(), dh.data(), h + 4 * count);
    return out;
  };
  EXPECT_TRUE(same_bits(on_team(1, run), on_team(2, run)));
}

// ---------------------------------------------------------------- adaLN modulation

// Tokens [b, T, H] and a modulation output c[b, 6H] of which shift, scale and
// gate are the first three slices (DiT's shift_msa, scale_msa, gate_msa).
struct ModCase {
  std::int64_t batch = 3;
  std::int64_t tokens = 5;
  std::int64_t hidden = 7;
  std::int64_t stride = 6 * 7;
  Floats tokens_a;  // x_hat, or the residual x
  Floats tokens_b;  // dy
  Floats tokens_c;  // the branch f
  Floats mod;
  ModCase(std::int64_t b, std::int64_t t, std::int64_t h, unsigned seed)
      : batch(b), tokens(t), hidden(h), stride(6 * h) {
    std::mt19937 rng(seed);
    tokens_a = random_normal(at(b * t * h), rng);
    tokens_b = random_normal(at(b * t * h), rng);
    tokens_c = random_normal(at(b * t * h), rng);
    mod = random_normal(at(b * stride), rng, 0.5F);
  }
  [[nodiscard]] const float* shift() const { return mod.data(); }
  [[nodiscard]] const float* scale() const { return mod.data() + hidden; }
  [[nodiscard]] const float* gate() const { return mod.data() + 2 * hidden; }
  [[nodiscard]] std::size_t token(std::int64_t n, std::int64_t t, std::int64_t j) const {
    return at((n * tokens + t) * hidden + j);
  }
  [[nodiscard]] std::size_t vec(std::int64_t n, std::int64_t slice, std::int64_t j) const {
    return at(n * stride + slice * hidden + j);
  }
};

TEST(CpuModulation, ModulateForwardReadsStridedShiftAndScale) {
  const ModCase c(3, 5, 7, 15);
  Floats y(c.tokens_a.size());
  modulate_forward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.shift(), c.scale(), c.stride,
                   y.data());
  for (std::int64_t n = 0; n < c.batch; ++n) {
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      for (std::int64_t j = 0; j < c.hidden; ++j) {
        const double ref =
            double{c.tokens_a[c.token(n, t, j)]} * (1 + double{c.mod[c.vec(n, 1, j)]}) +
            c.mod[c.vec(n, 0, j)];
        EXPECT_NEAR(y[c.token(n, t, j)], ref, 1e-6 * (1 + std::fabs(ref)))
            << n << "," << t << "," << j;
      }
    }
  }
  // In place over x_hat gives the same.
  Floats in_place = c.tokens_a;
  modulate_forward(c.batch, c.tokens, c.hidden, in_place.data(), c.shift(), c.scale(), c.stride,
                   in_place.data());
  EXPECT_TRUE(same_bits(in_place, y));
}

TEST(CpuModulation, ModulateBackwardSumsOverTokensIntoStridedSlices) {
  const ModCase c(3, 5, 7, 16);
  const float seed_value = 0.75F;  // what dc held: the sums are added to it
  Floats dmod(c.mod.size(), seed_value);
  Floats dxhat(c.tokens_a.size());
  modulate_backward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.scale(), c.stride,
                    c.tokens_b.data(), dxhat.data(), dmod.data(), dmod.data() + c.hidden);
  // loss = sum(dy * y) is linear in shift and scale: the sums below are exact
  // derivatives (checked against differences of the forward in the x_hat case).
  for (std::int64_t n = 0; n < c.batch; ++n) {
    for (std::int64_t j = 0; j < c.hidden; ++j) {
      double dshift = 0;
      double dscale = 0;
      for (std::int64_t t = 0; t < c.tokens; ++t) {
        const double dy = c.tokens_b[c.token(n, t, j)];
        dshift += dy;
        dscale += dy * c.tokens_a[c.token(n, t, j)];
        const double dxhat_ref = dy * (1 + double{c.mod[c.vec(n, 1, j)]});
        EXPECT_NEAR(dxhat[c.token(n, t, j)], dxhat_ref, 1e-6 * (1 + std::fabs(dxhat_ref)));
      }
      // Tolerance: 5 float additions of values of order 1.
      EXPECT_NEAR(dmod[c.vec(n, 0, j)], seed_value + dshift, 1e-5) << n << "," << j;
      EXPECT_NEAR(dmod[c.vec(n, 1, j)], seed_value + dscale, 1e-5) << n << "," << j;
      for (std::int64_t slice = 2; slice < 6; ++slice)
        EXPECT_EQ(dmod[c.vec(n, slice, j)], seed_value) << "slice " << slice;
    }
  }
  // d loss / d x_hat by central differences of the forward in double.
  Doubles xd = to_double(c.tokens_a);
  const Doubles w = to_double(c.tokens_b);
  const auto loss = [&] {
    double s = 0;
    for (std::int64_t n = 0; n < c.batch; ++n) {
      for (std::int64_t t = 0; t < c.tokens; ++t) {
        for (std::int64_t j = 0; j < c.hidden; ++j) {
          const std::size_t k = c.token(n, t, j);
          s += w[k] * (xd[k] * (1 + double{c.mod[c.vec(n, 1, j)]}) + c.mod[c.vec(n, 0, j)]);
        }
      }
    }
    return s;
  };
  for (std::size_t k = 0; k < xd.size(); k += 7)
    EXPECT_NEAR(dxhat[k], central_difference(loss, xd, k), 1e-5) << k;
  // dx_hat into dy's storage.
  Floats in_dy = c.tokens_b;
  Floats dmod2(c.mod.size(), seed_value);
  modulate_backward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.scale(), c.stride,
                    in_dy.data(), in_dy.data(), dmod2.data(), dmod2.data() + c.hidden);
  EXPECT_TRUE(same_bits(in_dy, dxhat));
  EXPECT_TRUE(same_bits(dmod2, dmod));
}

TEST(CpuModulation, GatedResidualForwardAndBackward) {
  const ModCase c(2, 6, 9, 17);
  Floats y(c.tokens_a.size());
  gated_residual_forward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.gate(), c.stride,
                         c.tokens_c.data(), y.data());
  const float seed_value = -0.25F;
  Floats dmod(c.mod.size(), seed_value);
  Floats df(c.tokens_c.size());
  gated_residual_backward(c.batch, c.tokens, c.hidden, c.tokens_c.data(), c.gate(), c.stride,
                          c.tokens_b.data(), df.data(), dmod.data() + 2 * c.hidden);
  for (std::int64_t n = 0; n < c.batch; ++n) {
    for (std::int64_t j = 0; j < c.hidden; ++j) {
      const double gate = c.mod[c.vec(n, 2, j)];
      double dgate = 0;
      for (std::int64_t t = 0; t < c.tokens; ++t) {
        const std::size_t k = c.token(n, t, j);
        const double ref = c.tokens_a[k] + gate * c.tokens_c[k];
        EXPECT_NEAR(y[k], ref, 1e-6 * (1 + std::fabs(ref)));
        EXPECT_NEAR(df[k], c.tokens_b[k] * gate, 1e-6);
        dgate += double{c.tokens_b[k]} * c.tokens_c[k];
      }
      EXPECT_NEAR(dmod[c.vec(n, 2, j)], seed_value + dgate, 1e-5) << n << "," << j;
      for (const std::int64_t slice : {0, 1, 3, 4, 5})
        EXPECT_EQ(dmod[c.vec(n, slice, j)], seed_value);
    }
  }
  // The residual add in place over x, and df into f's storage.
  Floats in_x = c.tokens_a;
  gated_residual_forward(c.batch, c.tokens, c.hidden, in_x.data(), c.gate(), c.stride,
                         c.tokens_c.data(), in_x.data());
  EXPECT_TRUE(same_bits(in_x, y));
  Floats in_f = c.tokens_c;
  Floats dmod2(c.mod.size(), seed_value);
  gated_residual_backward(c.batch, c.tokens, c.hidden, in_f.data(), c.gate(), c.stride,
                          c.tokens_b.data(), in_f.data(), dmod2.data() + 2 * c.hidden);
  EXPECT_TRUE(same_bits(in_f, df));
  EXPECT_TRUE(same_bits(dmod2, dmod));
}

TEST(CpuModulation, TheSameOnATeamOfTwo) {
  // 600 (sample, column) pairs of 256 tokens: split at pair 300, in the middle
  // of sample 1, so a part starts and ends inside a sample.
  const ModCase c(3, 256, 200, 18);
  ASSERT_TRUE(splits_in_two(c.batch * c.tokens * c.hidden));
  const auto run = [&] {
    const auto size = c.tokens_a.size();
    Floats out(4 * size + 2 * c.mod.size(), 0.5F);
    float* y = out.data();
    float* dmod = out.data() + 4 * size;
    modulate_forward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.shift(), c.scale(), c.stride,
                     y);
    modulate_backward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.scale(), c.stride,
                      c.tokens_b.data(), y + size, dmod, dmod + c.hidden);
    gated_residual_forward(c.batch, c.tokens, c.hidden, c.tokens_a.data(), c.gate(), c.stride,
                           c.tokens_c.data(), y + 2 * size);
    gated_residual_backward(c.batch, c.tokens, c.hidden, c.tokens_c.data(), c.gate(), c.stride,
                            c.tokens_b.data(), y + 3 * size, dmod + 2 * c.hidden);
    return out;
  };
  const Floats alone = on_team(1, run);
  EXPECT_TRUE(same_bits(alone, on_team(2, run)));
  // And the split sums are right: sample 1, column 150 (in the second part).
  double dshift = 0.5;
  for (std::int64_t t = 0; t < c.tokens; ++t) dshift += c.tokens_b[c.token(1, t, 150)];
  EXPECT_NEAR(alone[4 * c.tokens_a.size() + c.vec(1, 0, 150)], dshift, 1e-4);
}

TEST(CpuModulation, TimestepEmbeddingIsDitsSinusoids) {
  const Floats t = {0.0F, 1.0F, 500.5F};
  const std::int64_t dim = 8;
  Floats out(t.size() * dim, -7.0F);
  timestep_embedding(static_cast<std::int64_t>(t.size()), t.data(), dim, 10000.0, out.data());
  // t = 0: cos 0 = 1 in the first half, sin 0 = 0 in the second.
  for (std::int64_t i = 0; i < dim; ++i) EXPECT_EQ(out[at(i)], i < dim / 2 ? 1.0F : 0.0F) << i;
  // t = 1, i = 1: freq = exp(-ln(10^4) / 4) = 0.1.
  EXPECT_NEAR(out[at(dim + 1)], 0.9950041652780258, 1e-7);
  EXPECT_NEAR(out[at(dim + 4 + 1)], 0.09983341664682815, 1e-8);
  for (std::size_t n = 0; n < t.size(); ++n) {
    for (std::int64_t i = 0; i < dim / 2; ++i) {
      const double arg = t[n] * std::exp(-std::log(10000.0) * static_cast<double>(i) / 4.0);
      EXPECT_NEAR(out[n * dim + at(i)], std::cos(arg), 1e-7) << n << "," << i;
      EXPECT_NEAR(out[n * dim + at(4 + i)], std::sin(arg), 1e-7) << n << "," << i;
    }
  }
}

// ---------------------------------------------------------------- LayerNorm without affine

// Rows of x, the last all -0 (x - mean is -0 there: gamma 1, beta 0 make it +0).
Floats layernorm_input(std::int64_t rows, std::int64_t width, std::mt19937& rng) {
  Floats x = random_normal(at(rows * width), rng, 3.0F);
  for (std::int64_t j = 0; j < width; ++j) x[at((rows - 1) * width + j)] = -0.0F;
  return x;
}

TEST(CpuLayerNormNoAffine, ForwardIsBitForBitGammaOneBetaZero) {
  const std::int64_t rows = 6;
  const std::int64_t width = 45;
  std::mt19937 rng(19);
  const Floats x = layernorm_input(rows, width, rng);
  const Floats ones(at(width), 1.0F);
  const Floats zeros(at(width), 0.0F);
  Floats y_affine(x.size());
  Floats stats_affine(at(2 * rows));
  layernorm_forward(rows, width, x.data(), ones.data(), zeros.data(), y_affine.data(),
                    stats_affine.data());
  Floats y(x.size());
  Floats stats(at(2 * rows));
  layernorm_forward(rows, width, x.data(), nullptr, nullptr, y.data(), stats.data());
  EXPECT_TRUE(same_bits(y, y_affine));
  EXPECT_TRUE(same_bits(stats, stats_affine));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(y[x.size() - 1]), 0U) << "+0, as beta 0 makes it";
}

Doubles layernorm_reference(std::int64_t rows, std::int64_t width, const Doubles& x) {
  Doubles y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0;
    for (std::int64_t j = 0; j < width; ++j) mean += x[at(r * width + j)];
    mean /= static_cast<double>(width);
    double var = 0;
    for (std::int64_t j = 0; j < width; ++j)
      var += (x[at(r * width + j)] - mean) * (x[at(r * width + j)] - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(width) + kLayerNormEps);
    for (std::int64_t j = 0; j < width; ++j)
      y[at(r * width + j)] = (x[at(r * width + j)] - mean) * rstd;
  }
  return y;
}

TEST(CpuLayerNormNoAffine, BackwardMatchesFiniteDifferencesAndTheAffineForm) {
  const std::int64_t rows = 4;
  const std::int64_t width = 19;
  std::mt19937 rng(20);
  const Floats x = random_normal(at(rows * width), rng, 2.0F);
  const Floats dy = random_normal(x.size(), rng);
  Floats y(x.size());
  Floats stats(at(2 * rows));
  layernorm_forward(rows, width, x.data(), nullptr, nullptr, y.data(), stats.data());
  const float dx0 = 0.125F;
  Floats dx(x.size(), dx0);
  layernorm_backward(rows, width, x.data(), stats.data(), nullptr, dy.data(), dx.data(), nullptr,
                     nullptr);
  Doubles xd = to_double(x);
  const Doubles w = to_double(dy);
  const auto loss = [&] { return dot(w, layernorm_reference(rows, width, xd)); };
  // Tolerance: float rounding of gradients of order rstd ~ 0.5.
  for (std::size_t k = 0; k < xd.size(); ++k)
    EXPECT_NEAR(dx[k] - dx0, central_difference(loss, xd, k), 1e-5) << k;
  // The affine kernel with gamma 1: the same math, its sums possibly vectorised
  // otherwise (they share a loop with dgamma's), so to within rounding; and
  // with a frozen affine (no dgamma, dbeta) likewise.
  const Floats ones(at(width), 1.0F);
  Floats dx_affine(x.size(), dx0);
  Floats dgamma(at(width), 0.0F);
  Floats dbeta(at(width), 0.0F);
  layernorm_backward(rows, width, x.data(), stats.data(), ones.data(), dy.data(), dx_affine.data(),
                     dgamma.data(), dbeta.data());
  Floats dx_frozen(x.size(), dx0);
  layernorm_backward(rows, width, x.data(), stats.data(), ones.data(), dy.data(), dx_frozen.data(),
                     nullptr, nullptr);
  for (std::size_t k = 0; k < x.size(); ++k) {
    EXPECT_NEAR(dx[k], dx_affine[k], 1e-6) << k;
    EXPECT_NEAR(dx_frozen[k], dx_affine[k], 1e-6) << k;
  }
}

TEST(CpuLayerNormNoAffine, ForwardIsTheSameOnATeamOfTwo) {
  const std::int64_t rows = 512;
  const std::int64_t width = 300;
  ASSERT_TRUE(splits_in_two(rows * width));
  std::mt19937 rng(21);
  const Floats x = layernorm_input(rows, width, rng);
  const auto run = [&] {
    Floats y(x.size() + at(2 * rows));
    layernorm_forward(rows, width, x.data(), nullptr, nullptr, y.data(), y.data() + x.size());
    return y;
  };
  EXPECT_TRUE(same_bits(on_team(1, run), on_team(2, run)));
}

}  // namespace
}  // namespace gpipe::exec::cpu
