// Training throughput of the CPU executor, in samples per second: a small GPT
// (transformer:layers=4,hidden=64,heads=4,seq=32) through gpipe with K = 1 and
// K = 2 stages, M = 4 micro-batches of 4 samples. Reported in the issue notes;
// it shows what the pipeline gains on this machine's cores.
#include <benchmark/benchmark.h>

#include "exec/cpu/cpu_backend.hpp"
#include "models/model_spec.hpp"
#include "models/partition.hpp"
#include "schedules/generate.hpp"

namespace {

using namespace gpipe;

void BM_TrainTransformer(benchmark::State& state) {
  const int stages = static_cast<int>(state.range(0));
  exec::TrainOptions options;
  options.model = models::parse_model("transformer:layers=4,hidden=64,heads=4,seq=32");
  const int num_layers = static_cast<int>(options.model.layers.size());
  options.schedule = schedules::generate(
      "gpipe", {.num_ranks = stages, .num_microbatches = 4});
  options.partition = models::partition_uniform(num_layers, stages);
  options.batch = 16;
  options.steps = 2;
  std::int64_t samples = 0;
  for (auto _ : state) {
    const exec::TrainResult result = exec::cpu::train(options);
    benchmark::DoNotOptimize(result.losses.data());
    samples += options.batch * options.steps;
  }
  state.SetItemsProcessed(samples);  // items_per_second = samples/s
}

BENCHMARK(BM_TrainTransformer)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
