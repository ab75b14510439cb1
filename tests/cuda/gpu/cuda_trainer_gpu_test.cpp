// The CUDA executor on a GPU (label gpu; skipped without one):
// - transparency in fp32: K=4, M=8 trains to the same losses and weights as
//   K=1, M=1 on the GPU, and both follow the CPU reference;
// - the stages overlap in time on their SM partitions;
// - the activation peak is exactly the CPU executor's (the same stash rules);
// - CUDA-event timing gives a complete timeline too;
// - an injected fault names the rank and the action.
//
// Tolerances: GPU against GPU, 1e-5 relative as on the CPU (only the order of
// the accumulated gradient sums differs); GPU against CPU, 1e-3 (cuBLAS and
// the reductions sum in other orders than OpenBLAS, over three steps of AdamW).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "base/error.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/cuda/backend/cuda_backend.hpp"
#include "exec/cuda/base/device.hpp"
#include "schedules/lower.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec::cuda {
namespace {

using trainer_test::RunConfig;

#define SKIP_WITHOUT_GPU() \
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device"

double worst_weight_error(const TrainResult& run, const TrainResult& ref) {
  double worst = 0;
  EXPECT_EQ(run.weights.size(), ref.weights.size());
  for (std::size_t l = 0; l < std::min(run.weights.size(), ref.weights.size()); ++l) {
    for (std::size_t p = 0; p < ref.weights[l].size(); ++p) {
      worst = std::max(worst, trainer_test::relative_error(run.weights[l][p], ref.weights[l][p]));
    }
  }
  return worst;
}

double worst_loss_error(const TrainResult& run, const TrainResult& ref) {
  double worst = 0;
  EXPECT_EQ(run.losses.size(), ref.losses.size());
  for (std::size_t s = 0; s < std::min(run.losses.size(), ref.losses.size()); ++s) {
    worst = std::max(worst, std::abs(run.losses[s] - ref.losses[s]) / std::abs(ref.losses[s]));
  }
  return worst;
}

RunConfig config(const std::string& model, int k, int m, std::int64_t n) {
  RunConfig c;
  c.model = model;
  c.stages = k;
  c.microbatches = m;
  c.batch = n;
  c.optimizer = trainer_test::momentum(0.01F);  // every weight compares (see the CPU test on AdamW)
  return c;
}

class Transparency : public ::testing::TestWithParam<std::string> {};

TEST_P(Transparency, FourStagesEightMicrobatchesMatchOneStageOneMicrobatch) {
  SKIP_WITHOUT_GPU();
  const std::string model = GetParam();
  for (const char* schedule : {"gpipe", "1f1b"}) {
    RunConfig pipelined = config(model, 4, 8, 16);
    pipelined.schedule = schedule;
    pipelined.recompute = schedules::RecomputePolicy::stage_except_last;
    const RunConfig single = config(model, 1, 1, 16);
    const Trained<CudaBackend> gpu = train_in_process<CudaBackend>(trainer_test::options_for(pipelined));
    const Trained<CudaBackend> gpu_ref = train_in_process<CudaBackend>(trainer_test::options_for(single));
    const TrainResult cpu_ref = cpu::train(trainer_test::options_for(single));

    const double loss_gpu = worst_loss_error(gpu.result, gpu_ref.result);
    const double weight_gpu = worst_weight_error(gpu.result, gpu_ref.result);
    const double loss_cpu = worst_loss_error(gpu.result, cpu_ref);
    const double weight_cpu = worst_weight_error(gpu.result, cpu_ref);
    std::printf("%s %s K=4 M=8: vs GPU K=1 loss %.2e weights %.2e; vs CPU loss %.2e weights %.2e\n",
                model.c_str(), schedule, loss_gpu, weight_gpu, loss_cpu, weight_cpu);
    EXPECT_LE(loss_gpu, 1e-5) << schedule;
    EXPECT_LE(weight_gpu, 1e-5) << schedule;
    EXPECT_LE(loss_cpu, 1e-3) << schedule;
    EXPECT_LE(weight_cpu, 1e-3) << schedule;
  }
}

// Each family once; llama and dit with their default flash attention, and
// llama with a tied embedding (its ends exchange the gradient, not yet run on a GPU).
INSTANTIATE_TEST_SUITE_P(Models, Transparency,
                         ::testing::Values("mlp:layers=6,hidden=32",
                                           "transformer:layers=2,hidden=32,heads=4,seq=16",
                                           "llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=16,vocab=64",
                                           "llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=16,vocab=64,tied=1",
                                           "dit:layers=2,hidden=32,heads=4,tokens=16,patch=1,channels=2,classes=3"));

TEST(CudaTrainer, StagesOverlapInTimeOnTheirPartitions) {
  SKIP_WITHOUT_GPU();
  RunConfig c = config("mlp:layers=8,hidden=512", 4, 8, 64);
  c.steps = 3;
  TrainOptions o = trainer_test::options_for(c);
  o.measured_steps = 2;
  const Trained<CudaBackend> r = train_in_process<CudaBackend>(o);
  std::printf("partitions: %s; timing %s %s\n", r.report.partitions.c_str(), r.report.timing.c_str(),
              r.report.timing_note.c_str());
  const auto& actions = r.result.timeline.actions;
  std::size_t overlaps = 0;
  for (const auto& a : actions) {
    for (const auto& b : actions) {
      if (a.rank.value < b.rank.value && a.stream == timelines::Stream::compute &&
          b.stream == timelines::Stream::compute && a.start_ns < b.end_ns && b.start_ns < a.end_ns) {
        ++overlaps;
      }
    }
  }
  std::printf("overlapping compute pairs across ranks: %zu; step %.1f us, bubble %.3f (analytic %.3f)\n",
              overlaps, r.result.metrics.step_time_us, r.result.metrics.bubble_fraction,
              r.result.metrics.bubble_fraction_analytic.value_or(-1));
  EXPECT_GT(overlaps, 0u);
  // Every action of the lowered schedule is in the timeline, on its stream.
  EXPECT_EQ(r.result.timeline.info.source, "cuda");
  EXPECT_FALSE(r.result.timeline.info.device.empty());
  EXPECT_GT(r.result.metrics.step_time_us, 0);
}

TEST(CudaTrainer, ActivationPeakIsExactlyTheCpuExecutors) {
  SKIP_WITHOUT_GPU();
  for (auto recompute : {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage}) {
    RunConfig c = config("transformer:layers=2,hidden=32,heads=4,seq=16", 2, 4, 6);
    c.recompute = recompute;
    c.steps = 1;
    const Trained<CudaBackend> gpu = train_in_process<CudaBackend>(trainer_test::options_for(c));
    const TrainResult cpu = cpu::train(trainer_test::options_for(c));
    ASSERT_EQ(gpu.result.metrics.ranks.size(), cpu.metrics.ranks.size());
    for (std::size_t r = 0; r < cpu.metrics.ranks.size(); ++r) {
      EXPECT_EQ(gpu.result.metrics.ranks[r].peak_activation_bytes,
                cpu.metrics.ranks[r].peak_activation_bytes)
          << "rank " << r;
      EXPECT_EQ(gpu.result.metrics.ranks[r].static_bytes, cpu.metrics.ranks[r].static_bytes);
    }
  }
}

TEST(CudaTrainer, EventTimingGivesACompleteTimeline) {
  SKIP_WITHOUT_GPU();
  RunConfig c = config("mlp:layers=4,hidden=64", 2, 4, 8);
  CudaBackend::Options cuda;
  cuda.timing = ActionTiming::events;
  const TrainOptions o = trainer_test::options_for(c);
  const Trained<CudaBackend> r = train_in_process<CudaBackend>(o, cuda);
  EXPECT_EQ(r.report.timing, "events");
  const schedules::Schedule lowered = schedules::lower(o.schedule);
  std::size_t expected = 0;
  for (const auto& program : lowered.ranks) expected += program.size();
  EXPECT_EQ(r.result.timeline.actions.size(), expected);
  for (const auto& a : r.result.timeline.actions) EXPECT_LE(a.start_ns, a.end_ns) << to_string(a.action);
  EXPECT_GT(r.result.metrics.step_time_us, 0);
}

TEST(CudaTrainer, AnInjectedFaultNamesTheRankAndAction) {
  SKIP_WITHOUT_GPU();
  RunConfig c = config("mlp:layers=4,hidden=16", 4, 4, 8);
  TrainOptions o = trainer_test::options_for(c);
  o.fault = FaultInjection{schedules::Rank{2}, schedules::make_action(2, schedules::ActionKind::F, 3),
                           FaultInjection::Kind::fail};
  try {
    (void)train_in_process<CudaBackend>(o);
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "rank 2 failed in 2F3: injected fault");
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
