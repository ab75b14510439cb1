#include "exec/cuda/backend/distributed_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/backend/device_stage.hpp"
#include "exec/cuda/nccl/nccl_transport.hpp"
#include "exec/cuda/backend/cuda_worker.hpp"
#include "exec/cuda/backend/nccl_device_link.hpp"
#include "exec/cuda/backend/step_timeline.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_setup.hpp"
#include "exec/runtime/run_threads.hpp"
#include "exec/dist/tcp_store.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::cuda {

using nlohmann::json;
using schedules::Rank;
using schedules::Stage;

namespace {

// How long a rank waits at the store (a step's barrier, the other ranks'
// parts) and for NCCL to join: the watchdog's time, and at least 30 s for a
// slow start. The store's waits cannot be woken by an abort, so a rank whose
// peer failed leaves them after this long, with an error naming the wait.
std::chrono::milliseconds store_timeout(double watchdog_seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(30.0, watchdog_seconds) * 1000));
}

// This rank's measured part, for the reporter: per measured step, the
// intervals and the memory samples; and its static bytes.
json rank_part(ActionTimer& timer, const ActionMemoryLog& log, int measured_steps,
               std::int64_t static_bytes) {
  json steps = json::array();
  for (int k = 0; k < measured_steps; ++k) {
    json intervals = json::array();
    for (const auto& [key, interval] : timer.intervals(k)) {
      intervals.push_back({key.first, to_string(key.second), interval.start_ns, interval.end_ns});
    }
    json memory = json::array();
    for (const auto& s : log.samples(static_cast<std::size_t>(k))) {
      memory.push_back({s.rank, s.action_index, s.activation_bytes});
    }
    steps.push_back({{"intervals", intervals}, {"memory", memory}});
  }
  return {{"steps", steps}, {"static_bytes", static_bytes}};
}

}  // namespace

RankResult train_cuda_rank(const TrainOptions& o, const CudaTrainOptions& c, const LaunchInfo& launch) {
  check_train_options(o, "cuda");
  const schedules::Schedule lowered = lower_checked(o);
  if (lowered.num_ranks != launch.world_size) {
    throw InputError(fmt::format(
        "the schedule has {} ranks but {} started {} processes: launch one process per rank",
        lowered.num_ranks, launch.launcher, launch.world_size));
  }
  const RunPlan plan = make_plan(o, lowered);
  const int me = launch.rank;
  const int device = launch.local_rank;
  require_device();
  use_device(device);

  TcpStore store(launch.master_addr, launch.master_port, me == 0, store_timeout(o.watchdog_seconds));
  if (me == 0) store.set("gpipe/nccl_ids", make_nccl_ids());
  NcclTransport transport(me, launch.world_size, device, store.get("gpipe/nccl_ids"),
                          store_timeout(o.watchdog_seconds));
  NcclDeviceLink link(transport);

  RankResult out;
  CudaTrainResult& result = out.result;
  result.partitions = fmt::format("one GPU per rank ({} processes, {})", launch.world_size, launch.launcher);
  result.distributed = true;
  Stream compute(device);
  CudaDeviceMemory memory(device);
  RankDevice rank_device(device, compute, memory);
  ActionMemoryLog log(me);
  MemoryAccount account;
  account.set_observer([&log](std::int64_t bytes) { log.record(bytes); });
  std::vector<std::unique_ptr<DeviceStage>> stages(static_cast<std::size_t>(lowered.num_stages));
  std::vector<DeviceStage*> own(stages.size(), nullptr);
  std::int64_t static_bytes = 0;
  for (int s = 0; s < lowered.num_stages; ++s) {
    if (lowered.rank_of(Stage{s}).value != me) continue;
    auto& stage = stages[static_cast<std::size_t>(s)];
    stage = std::make_unique<DeviceStage>(o.model, o.partition.first_layer(s), o.partition.end_layer(s),
                                          o.seed, o.optimizer, lowered.num_microbatches, &account,
                                          rank_device.context());
    own[static_cast<std::size_t>(s)] = stage.get();
    static_bytes += stage->static_bytes();
  }
  compute.synchronize();

  RunTiming timing = make_run_timing(c.timing, lowered.num_ranks, o.measured_steps);
  result.timing = timing.timer().name();
  result.timing_note = timing.note;

  RunControl control(lowered.num_ranks);
  for (int r = 0; r < lowered.num_ranks; ++r) {
    if (r != me) control.exit_worker(Rank{r}, true);  // they run in other processes
  }
  control.add_abort_hook([&] { link.abort(); });
  CudaWorker worker(Rank{me}, plan, own, rank_device,
                    CudaWorkerLinks{&link, &control,
                                    [&](int step) {
                                      store.barrier(fmt::format("gpipe/step{}", step), me,
                                                    launch.world_size);
                                    },
                                    &timing.timer(), &log});
  try {
    run_supervised(o, control, lowered, {[&worker] { worker.run(); }});
  } catch (...) {
    try {  // the run's error is the one to report (see cuda_trainer.cpp)
      if (timing.cupti) timing.cupti->finish();
    } catch (...) {
    }
    throw;
  }
  transport.synchronize();
  GPIPE_CUDA_CHECK(cudaDeviceSynchronize());
  if (timing.cupti) timing.cupti->finish();

  // Every rank's part goes to the reporter through the store.
  const Rank reporter = lowered.rank_of(Stage{lowered.num_stages - 1});
  out.reporter = reporter.value == me;
  store.set(fmt::format("gpipe/part{}", me),
            rank_part(timing.timer(), log, o.measured_steps, static_bytes).dump());
  TrainResult& train = result.train;
  for (const auto& stage : stages) {
    if (!stage) continue;
    for (auto& layer : stage->download_weights()) train.weights.push_back(std::move(layer));
  }
  result.allocator_peak_bytes = {rank_device.allocator.stats().peak_requested_bytes};
  result.device_peak_used_bytes = rank_device.allocator.device_peak_used_bytes();
  if (out.reporter) {
    train.losses = control.losses();
    schedules::TimelineInfo info = schedules::info_of(lowered);
    info.source = "cuda";
    info.device = device_name(device);
    info.batch_size = o.batch;
    info.static_bytes.assign(static_cast<std::size_t>(lowered.num_ranks), 0);
    std::vector<schedules::Timeline> measured(static_cast<std::size_t>(o.measured_steps));
    std::vector<std::vector<std::vector<ActionMemorySample>>> memory_samples(measured.size());
    std::vector<MeasuredIntervals> intervals(measured.size());
    for (int r = 0; r < lowered.num_ranks; ++r) {
      const json part = json::parse(store.get(fmt::format("gpipe/part{}", r)));
      info.static_bytes[static_cast<std::size_t>(r)] = part.at("static_bytes").get<std::int64_t>();
      for (std::size_t k = 0; k < measured.size(); ++k) {
        const json& step = part.at("steps").at(k);
        for (const json& i : step.at("intervals")) {
          intervals[k][{i.at(0).get<int>(), schedules::parse_action(i.at(1).get<std::string>())}] =
              GpuInterval{i.at(2).get<std::int64_t>(), i.at(3).get<std::int64_t>()};
        }
        auto& samples = memory_samples[k].emplace_back();
        for (const json& m : step.at("memory")) {
          samples.push_back({m.at(0).get<int>(), m.at(1).get<int>(), m.at(2).get<std::int64_t>()});
        }
      }
    }
    for (std::size_t k = 0; k < measured.size(); ++k) {
      measured[k].info = info;
      measured[k].actions = complete_step_actions(lowered, intervals[k]);
      for (const auto& samples : memory_samples[k]) {
        const auto placed = place_memory_samples(samples, lowered, measured[k].actions);
        measured[k].memory.insert(measured[k].memory.end(), placed.begin(), placed.end());
      }
    }
    const std::size_t median = median_step(measured);
    train.timeline = std::move(measured[median]);
    train.timeline_step = o.steps - o.measured_steps + static_cast<int>(median);
    train.metrics = schedules::compute_metrics(train.timeline);
  }
  // Rank 0 serves the store: it stays until the reporter has read every part.
  store.barrier("gpipe/done", me, launch.world_size);
  return out;
}

}  // namespace gpipe::exec::cuda
