// Training throughput of the CPU executor, in samples per second
// (items_per_second), at issue 15's configurations: GPT models of the
// transformer spec, batch 16, whole steps (forward, backward, AdamW).
//   K=1 (M=1), for transformer:layers=4,hidden=64,heads=4,seq=32 and
//   transformer:layers=4,hidden=256,heads=4,seq=128;
//   K=2, M=8, 1f1b, for both.
// Compare with PyTorch eager on the same model (the note has the script).
#include <benchmark/benchmark.h>

#include <string>

#include "exec/cpu/cpu_backend.hpp"
#include "models/model_spec.hpp"
#include "models/partition.hpp"
#include "schedules/generate.hpp"

namespace {

using namespace gpipe;

const char* const kModels[] = {"transformer:layers=4,hidden=64,heads=4,seq=32",
                               "transformer:layers=4,hidden=256,heads=4,seq=128"};

// range(0): which model; range(1): K (M = 1 for K = 1, else 8).
void BM_TrainTransformer(benchmark::State& state) {
  const int stages = static_cast<int>(state.range(1));
  exec::TrainOptions options;
  options.model = models::parse_model(kModels[state.range(0)]);
  const int num_layers = static_cast<int>(options.model.layers.size());
  options.schedule = schedules::generate("1f1b", {.num_ranks = stages, .num_microbatches = stages == 1 ? 1 : 8});
  options.partition = models::partition_uniform(num_layers, stages);
  options.batch = 16;
  options.steps = 3;
  std::int64_t samples = 0;
  for (auto _ : state) {
    const exec::TrainResult result = exec::cpu::train(options);
    benchmark::DoNotOptimize(result.losses.data());
    samples += options.batch * options.steps;
  }
  state.SetItemsProcessed(samples);  // items_per_second = samples/s
  state.SetLabel(std::string(kModels[state.range(0)]) + (stages == 1 ? ", K=1" : ", K=2 M=8 1f1b"));
}

BENCHMARK(BM_TrainTransformer)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
