// The executor's seams as concepts (exec/runtime/training_backend.hpp,
// exec/inference/serving_device.hpp): every backend in the tree satisfies
// them, its optional parts are read as they are declared, and a type missing
// a required part is refused. All of it is checked at compile time; the
// backends defined inside other files are checked there (CpuAsProcesses in
// trainer_processes_test.cpp, the serving devices beside their classes, the
// CUDA backend in tests/cuda/host/cuda_trainer_host_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/inference/serving_device.hpp"
#include "exec/runtime/training_backend.hpp"
#include "tests/exec/fake_backend.hpp"

namespace gpipe::exec {
namespace {

using fake::FakeMessage;
using fake::FakeTensor;

// The CPU backend: every part, the optional ones too.
static_assert(StageBackend<cpu::CpuBackend>);
static_assert(WorkerBackend<cpu::CpuBackend>);
static_assert(TrainingRun<cpu::CpuBackend::Run, cpu::CpuBackend>);
static_assert(TrainingBackend<cpu::CpuBackend>);
static_assert(SplitBackwardBackend<cpu::CpuBackend>);
static_assert(ShardedOptimizerBackend<cpu::CpuBackend>);
static_assert(GradientReducingBackend<cpu::CpuBackend>);

// The worker tests' scripted backend: a worker's backend, nothing more.
static_assert(WorkerStage<fake::ScriptedStage, FakeTensor>);
static_assert(WorkerDevice<fake::FakeDevice, FakeTensor, FakeMessage>);
static_assert(WorkerBackend<fake::FakeBackend>);
static_assert(!StageBackend<fake::FakeBackend>);
static_assert(!TrainingBackend<fake::FakeBackend>);
static_assert(!SplitBackwardBackend<fake::FakeBackend>);
static_assert(!GradientReducingBackend<fake::FakeBackend>);

// A rank's device without drain(), and one whose drain() may throw (a worker
// drains on its way out, where it must not throw).
struct UndrainedDevice {
  void enter_thread();
  FakeTensor upload(exec::Tensor host);
  void data_ready();
  FakeTensor ready(FakeMessage message);
  FakeMessage local(FakeTensor tensor);
  bool all_finite(const FakeTensor& tensor);
  double sum(const FakeTensor& tensor);
  void finish_step(RunControl& control);
};
struct ThrowingDrainDevice : UndrainedDevice {
  void drain();
};
struct UndrainedBackend {
  using Tensor = FakeTensor;
  using Message = FakeMessage;
  using Stage = fake::ScriptedStage;
  using RankDevice = UndrainedDevice;
};
static_assert(!WorkerDevice<UndrainedDevice, FakeTensor, FakeMessage>);
static_assert(!WorkerDevice<ThrowingDrainDevice, FakeTensor, FakeMessage>);
static_assert(!WorkerBackend<UndrainedBackend>);

// The CPU's math and worker parts with a Run that has none of a run's: a
// stage's backend and a worker's, not a training one. (Refused without a hard
// error: StageBackend is looked at before the stages are.)
struct RunlessBackend : cpu::CpuBackend {
  using Stage = exec::Stage<RunlessBackend>;
  struct Run {};
};
static_assert(StageBackend<RunlessBackend>);
static_assert(WorkerBackend<RunlessBackend>);
static_assert(!TrainingRun<RunlessBackend::Run, RunlessBackend>);
static_assert(!TrainingBackend<RunlessBackend>);

// A backend without the math: no make_layer and the rest. Not a training
// backend either, and saying so does not instantiate its stage.
struct MathlessBackend {
  static constexpr std::string_view kName = "mathless";
  using Tensor = exec::Tensor;
  using Message = exec::Tensor;
  struct Context {};
  using Optimizer = cpu::OptimizerState;
  using Stage = exec::Stage<MathlessBackend>;
  using RankDevice = cpu::CpuBackend::RankDevice;
};
static_assert(!StageBackend<MathlessBackend>);
static_assert(!TrainingBackend<MathlessBackend>);

// The optional split backward: declared true, declared false, not declared.
struct SplitDeclared {
  static constexpr bool kRunsSplitBackward = true;
};
struct SplitRefused {
  static constexpr bool kRunsSplitBackward = false;
};
static_assert(SplitBackwardBackend<SplitDeclared> && runs_split_backward<SplitDeclared>());
static_assert(!SplitBackwardBackend<SplitRefused> && !runs_split_backward<SplitRefused>());
static_assert(!SplitBackwardBackend<MathlessBackend> && !runs_split_backward<MathlessBackend>());

// A serving device, and one without select_sequence().
struct ScriptedServingDevice {
  using Tensor = exec::Tensor;
  void build(const inference::ServingRequest& request, int first, int end);
  Tensor input(Tensor host);
  Tensor zeros(std::vector<std::int64_t> shape);
  Tensor forward(Tensor x, const Tensor* target);
  std::int64_t start_sequences(int sequences, int b);
  void select_sequence(int sequence);
  Tensor to_host(Tensor& x);
};
struct UnselectingServingDevice {
  using Tensor = exec::Tensor;
  void build(const inference::ServingRequest& request, int first, int end);
  Tensor input(Tensor host);
  Tensor zeros(std::vector<std::int64_t> shape);
  Tensor forward(Tensor x, const Tensor* target);
  std::int64_t start_sequences(int sequences, int b);
  Tensor to_host(Tensor& x);
};
static_assert(inference::ServingDevice<ScriptedServingDevice>);
static_assert(!inference::ServingDevice<UnselectingServingDevice>);

// The verdicts above, where a test run lists them.
TEST(TrainingBackend, BackendsSatisfyTheirConcepts) {
  EXPECT_TRUE(TrainingBackend<cpu::CpuBackend>);
  EXPECT_TRUE(WorkerBackend<fake::FakeBackend>);
  EXPECT_FALSE(TrainingBackend<RunlessBackend>);
  EXPECT_TRUE(inference::ServingDevice<ScriptedServingDevice>);
}

}  // namespace
}  // namespace gpipe::exec
