// Configurations per second of sim::run_sweep on the shipped 48-layer
// transformer profile (50 layers with the embedding and the head), with 1
// and 2 worker threads.
//
// BM_Sweep_K32_M256: the first sweep gpipe was asked for, K 1..32 x M 1..256, N = 256,
// GPipe: 8,192 configurations, every one simulated.
//
// BM_Sweep_Families_M256: the same K and M, N = 256, for the nine generated
// families x the three recompute policies: 221,184 configurations of the
// 8,192's size, the families with two stages per rank twice the work.
//
// BM_Sweep_Million: about a million, K 1..32 x M 1..1024, N = 1024, the nine
// generated families x the three recompute policies: 884,736 configurations.
// Some cannot exist and are skipped, as a sweep skips them (a V = 2 family
// past K = 25 has more stages than layers; interleaved-1f1b and
// interleaved-zb need M a multiple of K; dualpipev needs M >= 2K): the
// `simulated` counter says how many were simulated, and at what rate. Each
// row streams past (sim::stream_sweep), so memory stays flat. A
// configuration costs about K x M x V of work, so this grid's mean
// configuration is about four times the 8,192-configuration one's.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "schedules/generate.hpp"
#include "sim/sweep.hpp"

namespace {

using namespace gpipe;

profiles::Profile shipped_profile() {
  return profiles::load_profile(profiles::resolve_profile(profiles::kDefaultProfile));
}

void BM_Sweep_K32_M256(benchmark::State& state) {
  const profiles::Profile profile = shipped_profile();
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

// K 1..32 x M 1..max_m, N = max_m, every family and recompute policy,
// streamed: the rows simulated and skipped are counted.
void sweep_every_family(benchmark::State& state, int max_m) {
  const profiles::Profile profile = shipped_profile();
  sim::SweepGrid sweep;
  for (int k = 1; k <= 32; ++k) sweep.grid.stages.push_back(k);
  for (int m = 1; m <= max_m; ++m) sweep.grid.microbatches.push_back(m);
  sweep.grid.schedules = schedules::schedule_names();
  sweep.grid.recompute = {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage,
                          schedules::RecomputePolicy::stage_except_last};
  sweep.grid.base.batch = max_m;
  const int threads = static_cast<int>(state.range(0));
  std::int64_t configurations = 0;
  std::int64_t simulated = 0;
  double step_time_us = 0;  // what the rows say, so that none is optimized away
  for (auto _ : state) {
    sim::stream_sweep(profile, sweep, threads, [&](sim::SweepRow&& row) {
      ++configurations;
      if (!row.ok()) return;
      ++simulated;
      step_time_us += row.metrics.step_time_us;
    });
  }
  benchmark::DoNotOptimize(step_time_us);
  state.SetItemsProcessed(configurations);  // items_per_second = configurations/s
  state.counters["simulated"] = benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
  state.counters["configurations"] = static_cast<double>(configurations);
}

void BM_Sweep_Families_M256(benchmark::State& state) { sweep_every_family(state, 256); }
BENCHMARK(BM_Sweep_Families_M256)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_Sweep_Million(benchmark::State& state) { sweep_every_family(state, 1024); }
// One iteration: a run takes minutes.
BENCHMARK(BM_Sweep_Million)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
