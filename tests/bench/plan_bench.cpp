// The planner's speed goal: a plan for N = 1024 GPUs over every
// valid configuration within 10 s. sim::plan_cluster for Llama 3 70B at
// 4,096 tokens (a global batch of 1,024 sequences) and Llama 3.1 405B at
// 8,192 (2,048 sequences) on H100s, 8 a node:
//   BM_Plan_1024/default: T 1, 2, 4, 8 (the divisors of 8), every K dividing
//     N / T, D the rest; b 1, 2, 4, 8; 1f1b and interleaved-1f1b; never and
//     always recompute; ZeRO 0 and 1 (gpipe-sim plan's default lists).
//   BM_Plan_1024/wide: b 1, 2; gpipe, 1f1b, interleaved-1f1b and zbv; never,
//     except_last and always; ZeRO 0 to 3.
// The `configurations` counter says how many rows each plan has (simulated
// and skipped alike); one iteration is one whole plan.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "models/model_spec.hpp"
#include "profiles/device.hpp"
#include "sim/cluster_planner.hpp"

namespace {

using namespace gpipe;
using schedules::RecomputePolicy;

sim::ClusterPlanRequest request(const char* model, std::int64_t global_batch, bool wide) {
  sim::ClusterPlanRequest r;
  r.model = models::parse_model(model);
  r.device = profiles::device_named("h100");
  r.gpus = 1024;
  r.gpus_per_node = 8;
  r.global_batch = global_batch;
  if (wide) {
    r.micro_batch_sizes = {1, 2};
    r.schedules = {"gpipe", "1f1b", "interleaved-1f1b", "zbv"};
    r.recompute = {RecomputePolicy::never, RecomputePolicy::stage_except_last, RecomputePolicy::stage};
    r.zero = {0, 1, 2, 3};
  }
  return r;
}

void plan(benchmark::State& state, const char* model, std::int64_t global_batch) {
  const sim::ClusterPlanRequest r = request(model, global_batch, state.range(0) == 1);
  std::size_t rows = 0;
  for (auto _ : state) {
    const auto plan = sim::plan_cluster(r);
    benchmark::DoNotOptimize(plan.data());
    rows = plan.size();
  }
  state.counters["configurations"] = static_cast<double>(rows);
}

void BM_Plan_1024_Llama3_70B(benchmark::State& state) { plan(state, "llama3-70b:seq=4096", 1024); }
void BM_Plan_1024_Llama31_405B(benchmark::State& state) { plan(state, "llama3.1-405b", 2048); }

BENCHMARK(BM_Plan_1024_Llama3_70B)->ArgName("wide")->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_Plan_1024_Llama31_405B)->ArgName("wide")->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
