#include "exec/cuda/backend/cuda_trainer.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/backend/device_stage.hpp"
#include "exec/cuda/base/green_context.hpp"
#include "exec/cuda/backend/cuda_worker.hpp"
#include "exec/cuda/backend/in_process_device_link.hpp"
#include "exec/cuda/backend/run_timing.hpp"
#include "exec/cuda/backend/step_timeline.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_setup.hpp"
#include "exec/runtime/run_threads.hpp"
#include "exec/runtime/step_barrier.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::cuda {

using schedules::Rank;
using schedules::Stage;

CudaTrainResult train_cuda(const TrainOptions& o, const CudaTrainOptions& c) {
  check_train_options(o, "cuda");
  const schedules::Schedule lowered = lower_checked(o);
  const RunPlan plan = make_plan(o, lowered);
  require_device();
  use_device(c.device);
  const int num_ranks = lowered.num_ranks;
  const int num_stages = lowered.num_stages;

  CudaTrainResult result;
  SmPartitions partitions = SmPartitions::create(c.device, num_ranks, c.sm_per_stage);
  result.green = partitions.green();
  result.partitions = partitions.green()
                          ? describe(partitions.split(), partitions.total_sms())
                          : fmt::format("{} plain streams sharing all {} SMs ({})", num_ranks,
                                        partitions.total_sms(), partitions.why());

  // Declared in this order so that what is charged (stages) goes before what
  // is charged to (accounts, logs) and before the memory it lives in.
  CudaDeviceMemory memory(c.device);
  std::vector<std::unique_ptr<RankDevice>> devices;
  std::vector<std::unique_ptr<ActionMemoryLog>> logs;
  std::vector<std::unique_ptr<MemoryAccount>> accounts;
  for (int r = 0; r < num_ranks; ++r) {
    const SmPartitions::ThreadBinding in_rank_context(partitions, r);
    devices.push_back(std::make_unique<RankDevice>(c.device, partitions.stream(r), memory));
    devices.back()->bind_thread = [&partitions, r] { partitions.bind_thread(r); };
    logs.push_back(std::make_unique<ActionMemoryLog>(r));
    accounts.push_back(std::make_unique<MemoryAccount>());
    accounts.back()->set_observer([log = logs.back().get()](std::int64_t bytes) { log->record(bytes); });
  }
  std::vector<std::unique_ptr<DeviceStage>> stages;
  for (int s = 0; s < num_stages; ++s) {
    const Rank rank = lowered.rank_of(Stage{s});
    RankDevice& device = *devices[rank.at()];
    const SmPartitions::ThreadBinding in_rank_context(partitions, rank.value);
    stages.push_back(std::make_unique<DeviceStage>(
        o.model, o.partition.first_layer(s), o.partition.end_layer(s), o.seed, o.optimizer,
        lowered.num_microbatches, accounts[rank.at()].get(), device.context()));
  }
  for (auto& device : devices) device->compute.synchronize();  // the weights are on the GPU

  RunTiming timing = make_run_timing(c.timing, num_ranks, o.measured_steps);
  result.timing = timing.timer().name();
  result.timing_note = timing.note;

  InProcessDeviceLink link(num_ranks);
  StepBarrier barrier(num_ranks);
  RunControl control(num_ranks);
  control.add_abort_hook([&] { link.abort(); });
  control.add_abort_hook([&] { barrier.abort(); });

  std::vector<std::unique_ptr<CudaWorker>> workers;
  for (int r = 0; r < num_ranks; ++r) {
    std::vector<DeviceStage*> own(static_cast<std::size_t>(num_stages), nullptr);
    for (int s = 0; s < num_stages; ++s) {
      if (lowered.rank_of(Stage{s}) == Rank{r}) own[static_cast<std::size_t>(s)] = stages[static_cast<std::size_t>(s)].get();
    }
    workers.push_back(std::make_unique<CudaWorker>(
        Rank{r}, plan, std::move(own), *devices[static_cast<std::size_t>(r)],
        CudaWorkerLinks{&link, &control, [&barrier](int) { (void)barrier.arrive_and_wait(); },
                        &timing.timer(),
                        logs[static_cast<std::size_t>(r)].get()}));
  }
  std::vector<std::function<void()>> bodies;
  for (auto& worker : workers) bodies.emplace_back([w = worker.get()] { w->run(); });
  try {
    run_supervised(o, control, lowered, std::move(bodies));
  } catch (...) {
    // The run's error is the one to report: a failure to stop CUPTI after a
    // failed run (a sticky device error) must not replace it.
    try {
      if (timing.cupti) timing.cupti->finish();
    } catch (...) {
    }
    throw;
  }
  GPIPE_CUDA_CHECK(cudaDeviceSynchronize());
  if (timing.cupti) timing.cupti->finish();

  TrainResult& train = result.train;
  train.losses = control.losses();
  schedules::TimelineInfo info = schedules::info_of(lowered);
  info.source = "cuda";
  info.device = device_name(c.device);
  info.batch_size = o.batch;
  info.static_bytes.assign(static_cast<std::size_t>(num_ranks), 0);
  for (int s = 0; s < num_stages; ++s) {
    info.static_bytes[lowered.rank_of(Stage{s}).at()] += stages[static_cast<std::size_t>(s)]->static_bytes();
  }
  std::vector<schedules::Timeline> measured(static_cast<std::size_t>(o.measured_steps));
  for (std::size_t k = 0; k < measured.size(); ++k) {
    schedules::Timeline& timeline = measured[k];
    timeline.info = info;
    timeline.actions = complete_step_actions(lowered, timing.timer().intervals(static_cast<int>(k)));
    for (const auto& log : logs) {
      const auto samples = place_memory_samples(log->samples(k), lowered, timeline.actions);
      timeline.memory.insert(timeline.memory.end(), samples.begin(), samples.end());
    }
  }
  const std::size_t median = median_step(measured);
  train.timeline = std::move(measured[median]);
  train.timeline_step = o.steps - o.measured_steps + static_cast<int>(median);
  train.metrics = schedules::compute_metrics(train.timeline);
  for (int s = 0; s < num_stages; ++s) {
    const SmPartitions::ThreadBinding in_rank_context(partitions, lowered.rank_of(Stage{s}).value);
    for (auto& layer : stages[static_cast<std::size_t>(s)]->download_weights()) {
      train.weights.push_back(std::move(layer));
    }
  }

  for (auto& device : devices) {
    result.allocator_peak_bytes.push_back(device->allocator.stats().peak_requested_bytes);
    result.device_peak_used_bytes =
        std::max(result.device_peak_used_bytes, device->allocator.device_peak_used_bytes());
  }
  if (timing.cupti) {
    const int slot = static_cast<int>(median);
    result.step_ids = timing.cupti->ids(slot);
    result.step_origin_ns = timing.cupti->origin_ns(slot);
    result.step_records = records_of(timing.cupti->records(), result.step_ids);
    result.dropped_records = timing.cupti->records().dropped;
  }
  return result;
}

}  // namespace gpipe::exec::cuda
