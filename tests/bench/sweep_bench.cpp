// Configurations per second for the sweep of issue 3: K 1..32 x M 1..256
// (8,192 configurations) of the shipped 48-layer transformer profile, N = 256.
// Target on the 2-core CI machine: the whole sweep in under 3 s.
#include <benchmark/benchmark.h>

#include <thread>

#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "sim/sweep.hpp"

namespace {

using namespace gpipe;

void BM_Sweep_K32_M256(benchmark::State& state) {
  const profiles::Profile profile = profiles::load_profile(profiles::resolve_profile(profiles::kDefaultProfile));
  sim::SweepGrid sweep;
  for (int k = 1; k <= 32; ++k) sweep.grid.stages.push_back(k);
  for (int m = 1; m <= 256; ++m) sweep.grid.microbatches.push_back(m);
  sweep.grid.base.batch = 256;
  const int threads = static_cast<int>(state.range(0));
  std::int64_t configurations = 0;
  for (auto _ : state) {
    const auto rows = sim::run_sweep(profile, sweep, threads);
    benchmark::DoNotOptimize(rows.data());
    configurations += static_cast<std::int64_t>(rows.size());
  }
  state.SetItemsProcessed(configurations);  // items_per_second = configurations/s
}

BENCHMARK(BM_Sweep_K32_M256)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
