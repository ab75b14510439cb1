// The CUDA trainers' checks that need no GPU: a configuration that cannot run
// is an InputError naming the flag before any device is touched, a launch
// whose process count is not the schedule's rank count too, and a valid one on
// a machine without a GPU is RunError "no CUDA device: ...". And the CUDA
// backend is a training backend (exec/runtime/training_backend.hpp) with the
// optional parts it has: a reduction over replicas (NCCL's), no split
// backward, no sharded optimizer state.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "exec/cuda/backend/cuda_backend.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/dist/train_as_process.hpp"
#include "exec/runtime/training_backend.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec::cuda {
namespace {

using trainer_test::RunConfig;

static_assert(TrainingBackend<CudaBackend>);
static_assert(GradientReducingBackend<CudaBackend>);
static_assert(!SplitBackwardBackend<CudaBackend>);
static_assert(!ShardedOptimizerBackend<CudaBackend>);

TrainOptions two_stages() {
  RunConfig c;
  c.model = "mlp:layers=3,hidden=8";
  c.stages = 2;
  c.microbatches = 2;
  c.batch = 4;
  return trainer_test::options_for(c);
}

std::string input_error(const std::function<void()>& run) {
  try {
    run();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(CudaTrainerChecks, BadOptionsAreInputErrorsBeforeTheDevice) {
  TrainOptions o = two_stages();
  o.steps = 0;
  EXPECT_EQ(input_error([&] { (void)train_in_process<CudaBackend>(o); }), "--steps must be at least 1, got 0");
  o = two_stages();
  o.partition = models::Partition{{1, 1}};
  EXPECT_EQ(input_error([&] { (void)train_in_process<CudaBackend>(o); }),
            "--partition 1,1 covers 2 layers but model mlp:layers=3,hidden=8 has 4");
  o = two_stages();
  o.fault = FaultInjection{schedules::Rank{5}, schedules::make_action(0, schedules::ActionKind::F, 0),
                           FaultInjection::Kind::fail};
  EXPECT_EQ(input_error([&] { (void)train_in_process<CudaBackend>(o); }),
            "--inject-fault 5:0F0: there is no rank 5 (the schedule has 2)");
}

TEST(CudaTrainerChecks, ALaunchOfTheWrongSizeIsAnInputError) {
  LaunchInfo launch;
  launch.world_size = 3;
  launch.launcher = "torchrun";
  EXPECT_EQ(input_error([&] { (void)train_as_process<CudaBackend>(two_stages(), {}, launch); }),
            "the schedule has 2 ranks but torchrun started 3 processes: launch one process per rank");
}

TEST(CudaTrainerChecks, WithoutAGpuAValidRunSaysSo) {
  if (device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  try {
    (void)train_in_process<CudaBackend>(two_stages());
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
