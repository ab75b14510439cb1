// Each pipeline stage runs its layers on its own worker thread, all calling
// OpenBLAS at once: layers run concurrently on several threads must give
// bit-for-bit the results of one thread running them in turn.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "models/families.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

struct Result {
  Tensor output;
  Tensor grad_input;
  std::vector<Tensor> grads;
};

// Forward and backward of a transformer block large enough for OpenBLAS's
// blocked kernels (H=64, S=16), from inputs fixed by `seed`.
Result run_seeded_block(unsigned seed) {
  const models::Model model =
      models::build_transformer({.layers = 1, .hidden = 64, .heads = 4, .seq = 16, .vocab = 32});
  auto layer = make_layer(model, 1, seed);
  std::mt19937 rng(seed);
  const Tensor x = cases::random_normal({4, 16, 64}, rng);
  Result r;
  Stash stash;
  r.output = layer->forward(x.clone(), nullptr, stash, nullptr);
  const Tensor dy = cases::random_normal({4, 16, 64}, rng);
  for (int i = 0; i < 3; ++i) {  // several backwards: accumulation too
    Stash again;
    (void)layer->forward(x.clone(), nullptr, again, nullptr);
    r.grad_input = layer->backward(std::move(again), dy);
  }
  for (const Parameter& p : layer->parameters()) r.grads.push_back(p.grad.clone());
  return r;
}

TEST(CpuThreads, ConcurrentLayersMatchSerialBitForBit) {
  constexpr unsigned kThreads = 4;
  std::vector<Result> serial;
  for (unsigned t = 0; t < kThreads; ++t) serial.push_back(run_seeded_block(t));
  std::vector<Result> parallel(kThreads);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&parallel, t] { parallel[t] = run_seeded_block(t); });
  }
  for (std::thread& th : threads) th.join();
  for (unsigned t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(cases::same_values(serial[t].output, parallel[t].output)) << t;
    EXPECT_TRUE(cases::same_values(serial[t].grad_input, parallel[t].grad_input)) << t;
    ASSERT_EQ(serial[t].grads.size(), parallel[t].grads.size());
    for (std::size_t k = 0; k < serial[t].grads.size(); ++k) {
      EXPECT_TRUE(cases::same_values(serial[t].grads[k], parallel[t].grads[k])) << t << " " << k;
    }
  }
}

}  // namespace
}  // namespace gpipe::exec::cpu
