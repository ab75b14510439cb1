// Training throughput of the CPU executor, in samples per second
// (items_per_second), at the configurations torch is compared on (scripts/compare-torch): GPT models of the
// transformer spec, batch 16, whole steps (forward, backward, AdamW).
//   K=1 (M=1), for transformer:layers=4,hidden=64,heads=4,seq=32 and
//   transformer:layers=4,hidden=256,heads=4,seq=128;
//   K=2, M=8, 1f1b, for both;
//   and K=1 with 2 threads per rank (--threads-per-rank 2), for both.
// Each iteration trains 2 warm-up steps and then kTimedSteps steps, and only
// those are timed (from the end of the last warm-up step to the end of the
// last step), so the figure is the steady state that PyTorch's is too.
// Compare with PyTorch eager on the same model: tests/bench/torch_gpt.py, run
// side by side with this by scripts/compare-torch.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "exec/cpu/cpu_backend.hpp"
#include "models/model_spec.hpp"
#include "models/partition.hpp"
#include "schedules/generate.hpp"

namespace {

using namespace gpipe;
using Clock = std::chrono::steady_clock;

constexpr int kWarmupSteps = 2;
constexpr int kTimedSteps = 8;

const char* const kModels[] = {"transformer:layers=4,hidden=64,heads=4,seq=32",
                               "transformer:layers=4,hidden=256,heads=4,seq=128"};

// range(0): which model; range(1): K (M = 1 for K = 1, else 8); range(2):
// threads per rank.
void BM_TrainTransformer(benchmark::State& state) {
  const int stages = static_cast<int>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  exec::TrainOptions options;
  options.model = models::parse_model(kModels[state.range(0)]);
  const int num_layers = static_cast<int>(options.model.layers.size());
  options.schedule = schedules::generate("1f1b", {.num_ranks = stages, .num_microbatches = stages == 1 ? 1 : 8});
  options.partition = models::partition_uniform(num_layers, stages);
  options.batch = 16;
  options.steps = kWarmupSteps + kTimedSteps;
  options.threads_per_rank = threads;
  Clock::time_point timed_from;
  Clock::time_point timed_to;
  options.on_step = [&](int step, double /*loss*/) {
    if (step == kWarmupSteps - 1) timed_from = Clock::now();
    if (step == options.steps - 1) timed_to = Clock::now();
  };
  for (auto _ : state) {
    const exec::TrainResult result = exec::cpu::train(options);
    benchmark::DoNotOptimize(result.losses.data());
    state.SetIterationTime(std::chrono::duration<double>(timed_to - timed_from).count());
  }
  state.SetItemsProcessed(state.iterations() * options.batch * kTimedSteps);  // samples/s
  state.SetLabel(std::string(kModels[state.range(0)]) + (stages == 1 ? ", K=1" : ", K=2 M=8 1f1b") +
                 (threads == 1 ? "" : ", " + std::to_string(threads) + " threads per rank"));
}

BENCHMARK(BM_TrainTransformer)
    ->ArgsProduct({{0, 1}, {1, 2}, {1}})
    ->Args({0, 1, 2})
    ->Args({1, 1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
