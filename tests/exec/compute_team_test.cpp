// A rank's ComputeTeam (--threads-per-rank): every part runs exactly once,
// however many runs follow each other; errors come back to the caller; the
// kernels split only on a team and never inside one of its parts; a GEMM
// split by rows or by columns, and a transformer block, on a team compute
// bit for bit what they do alone, whatever sgemm kernel OpenBLAS picked
// (OPENBLAS_CORETYPE=Haswell, SkylakeX, ...: exec/cpu/ops/gemm.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "models/families.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

TEST(ComputeTeam, EveryPartRunsOnceInEveryRun) {
  // Sleeping waiters, and waiters that poll first (helpers between jobs, the caller for its helpers).
  for (const SpinBudget spin : {SpinBudget::zero(), SpinBudget(20000)}) {
    ComputeTeam team(3, spin);
    EXPECT_EQ(team.size(), 3);
    // Many short runs back to back: a helper that wakes late must not run a part
    // of a run that has already returned, nor of the next one twice.
    for (int run = 0; run < 2000; ++run) {
      const int parts = 1 + run % 7;
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(parts));
      team.run(parts, [&](int part) { hits[static_cast<std::size_t>(part)].fetch_add(1); });
      for (int p = 0; p < parts; ++p) ASSERT_EQ(hits[static_cast<std::size_t>(p)].load(), 1) << run << " " << p;
    }
  }
}

TEST(ComputeTeam, PartsRunOnSeveralThreads) {
  ComputeTeam team(2);
  std::atomic<int> inside{0};
  std::atomic<bool> met{false};
  // Each part waits (up to 10 s) for the other to be inside too: only two threads get both in.
  team.run(2, [&](int) {
    inside.fetch_add(1);
    for (int i = 0; i < 10000 && inside.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (inside.load() == 2) met = true;
  });
  EXPECT_TRUE(met.load());
}

TEST(ComputeTeam, APartsExceptionReachesTheCallerAndTheTeamGoesOn) {
  ComputeTeam team(2);
  EXPECT_THROW(team.run(4, [](int part) {
    if (part == 2) throw std::runtime_error("part 2");
  }),
               std::runtime_error);
  int sum = 0;
  std::mutex m;
  team.run(4, [&](int part) {
    const std::lock_guard lock(m);
    sum += part;
  });
  EXPECT_EQ(sum, 6);
  EXPECT_THROW(ComputeTeam(0), std::invalid_argument);
}

TEST(ComputeTeam, KernelsSplitOnATeamButNotInsideItsParts) {
  EXPECT_EQ(ComputeTeam::current(), nullptr);
  EXPECT_EQ(parts_for(1000000, 1), 1);  // no team: one part
  ComputeTeam team(3);
  const ComputeTeam::Scope on_team(&team);
  EXPECT_EQ(ComputeTeam::current(), &team);
  EXPECT_EQ(parts_for(1000000, 1), 3);
  EXPECT_EQ(parts_for(10, 4), 2);  // at least 4 units a part
  EXPECT_EQ(parts_for(3, 4), 1);
  std::atomic<int> nested{0};
  team.run(3, [&](int) {
    if (ComputeTeam::current() == nullptr && parts_for(1000000, 1) == 1) nested.fetch_add(1);
  });
  EXPECT_EQ(nested.load(), 3);
  // Ranges cover [0, count) once, in contiguous pieces.
  std::vector<int> seen(10, 0);
  for_ranges(10, 3, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) ++seen[static_cast<std::size_t>(i)];
  });
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(ComputeTeam, DefaultThreadsShareTheCores) {
  const int cores = usable_cores();
  EXPECT_GE(cores, 1);
  EXPECT_EQ(default_threads_per_rank(1), cores);
  EXPECT_EQ(default_threads_per_rank(cores), 1);
  EXPECT_EQ(default_threads_per_rank(cores * 4), 1);  // at least one each
  EXPECT_EQ(default_threads_per_rank(0), cores);
}

// C = alpha op(A) op(B) + beta C on a team of `size` (1: alone), from the same
// random A, B and C every time.
std::vector<float> team_gemm(int size, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                             float alpha, float beta) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> a(static_cast<std::size_t>(m * k));
  std::vector<float> b(static_cast<std::size_t>(k * n));
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (std::vector<float>* v : {&a, &b, &c}) {
    for (float& x : *v) x = normal(rng);
  }
  ComputeTeam team(size);
  const ComputeTeam::Scope scope(&team);
  gemm(ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, m, n, k, alpha, a.data(),
       ta ? m : k, b.data(), tb ? k : n, beta, c.data(), n);
  return c;
}

TEST(ComputeTeam, AGemmOnATeamMatchesItAloneBitForBit) {
  struct Shape {
    std::int64_t m, n, k;
  };
  // By rows, cut at multiples of 12 rows: 250 rows (up to 7 parts of 4 MFLOP),
  // and 40 rows of 2000 columns. By columns, into bands fixed by the shape: 5
  // rows (a decode step's), 5 bands of 600 columns.
  for (const Shape s : {Shape{250, 300, 200}, Shape{40, 2000, 300}, Shape{5, 3000, 700}}) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        for (const float beta : {0.0F, 1.0F}) {
          const std::vector<float> alone = team_gemm(1, ta, tb, s.m, s.n, s.k, 0.5F, beta);
          for (const int size : {2, 3, 5}) {
            EXPECT_EQ(team_gemm(size, ta, tb, s.m, s.n, s.k, 0.5F, beta), alone)
                << s.m << "x" << s.n << "x" << s.k << " ta=" << ta << " tb=" << tb << " beta=" << beta
                << " team of " << size;
          }
        }
      }
    }
  }
}

struct BlockResult {
  Tensor output;
  Tensor grad_input;
  std::vector<Tensor> grads;
};

// Forward and backward of a transformer block whose GEMMs are large enough to
// split (rows 256, widths 128 to 512), on the calling thread's team if any.
BlockResult run_block() {
  const models::Model model =
      models::build_transformer({.layers = 1, .hidden = 128, .heads = 4, .seq = 32, .vocab = 32});
  auto layer = make_layer(model, 1, 5);
  std::mt19937 rng(5);
  const Tensor x = cases::random_normal({8, 32, 128}, rng);
  const Tensor dy = cases::random_normal({8, 32, 128}, rng);
  BlockResult r;
  Stash stash;
  r.output = layer->forward(x.clone(), nullptr, stash, nullptr);
  r.grad_input = layer->backward(std::move(stash), dy);
  for (const Parameter& p : layer->parameters()) r.grads.push_back(p.grad.clone());
  return r;
}

TEST(ComputeTeam, ATransformerBlockOnATeamMatchesItAloneBitForBit) {
  const BlockResult alone = run_block();
  ComputeTeam team(3);
  BlockResult on_team;
  {
    const ComputeTeam::Scope scope(&team);
    on_team = run_block();
  }
  EXPECT_TRUE(cases::same_values(alone.output, on_team.output));
  EXPECT_TRUE(cases::same_values(alone.grad_input, on_team.grad_input));
  ASSERT_EQ(alone.grads.size(), on_team.grads.size());
  for (std::size_t k = 0; k < alone.grads.size(); ++k) {
    EXPECT_TRUE(cases::same_values(alone.grads[k], on_team.grads[k])) << k;
  }
}

}  // namespace
}  // namespace gpipe::exec::cpu
