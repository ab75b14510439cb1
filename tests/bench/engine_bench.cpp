// Simulated actions per second for one large configuration (K=64, M=4096):
// the engine alone (deterministic mode, metrics only), with the timeline
// recorded, validated, and with shared links. Target on the 2-core CI
// machine: 10 million actions/s on one core (FIFO links, metrics only).
#include <benchmark/benchmark.h>

#include "schedules/generate.hpp"
#include "sim/engine.hpp"
#include "sim/link_model.hpp"

namespace {

using namespace gpipe;

// Every stage alike: 1 ms forward, 2 ms backward, 1 MB boundaries.
class BenchCosts final : public sim::CostModel {
 public:
  std::int64_t duration_ns(const schedules::Action& a) const override {
    return a.kind == schedules::ActionKind::F || a.kind == schedules::ActionKind::R ? 1'000'000 : 2'000'000;
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return 1 << 20; }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 1 << 24; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 1 << 20; }
};

void simulate_large(benchmark::State& state, const char* name, bool record, bool validate = false,
                    sim::LinkSharing sharing = sim::LinkSharing::fifo) {
  schedules::ScheduleOptions o;
  o.num_ranks = 64;
  o.num_microbatches = 4096;
  const schedules::Schedule schedule = schedules::generate(name, o);
  const BenchCosts costs;
  const sim::UniformLink link(5.0, 25.0);
  sim::SimOptions options;
  options.record_timeline = record;
  options.validate = validate;
  options.link_sharing = sharing;
  std::int64_t actions = 0;
  for (auto _ : state) {
    const sim::SimResult r = sim::simulate(schedule, costs, link, options);
    benchmark::DoNotOptimize(r.metrics.step_time_ns);
    actions += schedule.total_actions();
  }
  state.SetItemsProcessed(actions);  // reported as items_per_second = actions/s
}

void BM_Gpipe_K64_M4096(benchmark::State& s) { simulate_large(s, "gpipe", false); }
void BM_1f1b_K64_M4096(benchmark::State& s) { simulate_large(s, "1f1b", false); }
void BM_Gpipe_K64_M4096_Timeline(benchmark::State& s) { simulate_large(s, "gpipe", true); }
void BM_Gpipe_K64_M4096_Validated(benchmark::State& s) { simulate_large(s, "gpipe", false, true); }
void BM_Gpipe_K64_M4096_Shared(benchmark::State& s) {
  simulate_large(s, "gpipe", false, false, sim::LinkSharing::shared);
}

BENCHMARK(BM_Gpipe_K64_M4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_1f1b_K64_M4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gpipe_K64_M4096_Timeline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gpipe_K64_M4096_Validated)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gpipe_K64_M4096_Shared)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
