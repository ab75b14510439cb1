// A rank's ComputeTeam (--threads-per-rank): every part runs exactly once,
// however many runs follow each other; errors come back to the caller; the
// kernels split only on a team and never inside one of its parts; and a
// transformer block on a team of 3 computes bit for bit what it does alone.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/layers/layer.hpp"
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
