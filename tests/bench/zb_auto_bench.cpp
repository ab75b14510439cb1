// zb-auto's search, end to end (candidates generated, simulated, judged), on
// the default shipped profile as gpipe-sim cuts it: searches per second and
// candidates simulated per second, for the sweep-sized K=8, M=32 and smaller.
#include <benchmark/benchmark.h>

#include "plan/plan.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "sim/link_model.hpp"
#include "sim/profile_costs.hpp"
#include "sim/zb_auto.hpp"

namespace {

using namespace gpipe;

void search(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const profiles::Profile profile =
      profiles::load_profile(profiles::resolve_profile(profiles::kDefaultProfile).string());
  plan::PlanRequest request;
  request.schedule = "1f1b";  // the layout zb-auto searches in
  request.stages = k;
  request.microbatches = m;
  request.micro_batch_size = 1;
  const plan::Plan plan = plan::make_plan(profile, request);
  const sim::ProfileCosts costs(profile, plan.partition.layers_per_stage, plan.microbatch_sizes);
  const sim::UniformLink link(profile.link.latency_us, profile.link.bandwidth_GBps);
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  std::int64_t candidates = 0;
  for (auto _ : state) {
    const sim::ZbAutoResult r = sim::search_zb_auto(o, costs, link);
    benchmark::DoNotOptimize(r.step_time_ns);
    candidates += static_cast<std::int64_t>(r.candidates.size());
  }
  state.SetItemsProcessed(candidates);  // items_per_second = candidates simulated per second
  state.counters["searches_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(search)->Args({4, 16})->Args({8, 32})->Args({16, 64})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
