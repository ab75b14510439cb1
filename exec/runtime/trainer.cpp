#include "exec/runtime/trainer.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "exec/cpu/in_process_transport.hpp"
#include "exec/runtime/memory_recorder.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_setup.hpp"
#include "exec/runtime/run_threads.hpp"
#include "exec/runtime/stage_state.hpp"
#include "exec/runtime/step_barrier.hpp"
#include "exec/runtime/worker.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec {

using schedules::Rank;

TrainResult train(const TrainOptions& o) {
  check_train_options(o, "cpu");
  const schedules::Schedule lowered = lower_checked(o);
  const RunPlan plan = make_plan(o, lowered);
  const int num_ranks = lowered.num_ranks;
  const int num_stages = lowered.num_stages;

  // Declared in this order so that the stages (whose stashes are charged to
  // the accounts, which report to the recorders) go first.
  std::vector<std::unique_ptr<MemoryRecorder>> recorders;
  std::vector<std::unique_ptr<MemoryAccount>> accounts;
  for (int r = 0; r < num_ranks; ++r) {
    recorders.push_back(std::make_unique<MemoryRecorder>(Rank{r}));
    accounts.push_back(std::make_unique<MemoryAccount>());
    accounts.back()->set_observer(
        [recorder = recorders.back().get()](std::int64_t bytes) { recorder->record(bytes); });
  }
  std::vector<std::unique_ptr<StageState>> stages;
  for (int s = 0; s < num_stages; ++s) {
    const Rank rank = lowered.rank_of(schedules::Stage{s});
    stages.push_back(std::make_unique<StageState>(
        o.model, o.partition.first_layer(s), o.partition.end_layer(s), o.seed, o.optimizer,
        lowered.num_microbatches, accounts[rank.at()].get()));
  }

  InProcessTransport transport(num_ranks);
  StepBarrier barrier(num_ranks);
  RunControl control(num_ranks);
  control.add_abort_hook([&] { transport.abort(); });
  control.add_abort_hook([&] { barrier.abort(); });

  std::vector<std::unique_ptr<Worker>> workers;
  for (int r = 0; r < num_ranks; ++r) {
    std::vector<StageState*> own(static_cast<std::size_t>(num_stages), nullptr);
    for (int s = 0; s < num_stages; ++s) {
      if (lowered.rank_of(schedules::Stage{s}) == Rank{r})
        own[static_cast<std::size_t>(s)] = stages[static_cast<std::size_t>(s)].get();
    }
    workers.push_back(std::make_unique<Worker>(
        Rank{r}, plan, std::move(own),
        WorkerLinks{&transport, &control, &barrier, recorders[static_cast<std::size_t>(r)].get()}));
  }

  std::vector<std::function<void()>> bodies;
  for (auto& worker : workers) bodies.emplace_back([w = worker.get()] { w->run(); });
  run_supervised(o, control, lowered, std::move(bodies));

  TrainResult result;
  result.losses = control.losses();
  schedules::TimelineInfo info = schedules::info_of(lowered);
  info.source = "cpu";
  info.device = cpu_device_name();
  info.batch_size = o.batch;
  info.static_bytes.assign(static_cast<std::size_t>(num_ranks), 0);
  for (int s = 0; s < num_stages; ++s) {
    info.static_bytes[lowered.rank_of(schedules::Stage{s}).at()] +=
        stages[static_cast<std::size_t>(s)]->static_bytes();
  }
  std::vector<schedules::Timeline> measured(static_cast<std::size_t>(o.measured_steps));
  for (std::size_t k = 0; k < measured.size(); ++k) {
    schedules::Timeline& timeline = measured[k];
    timeline.info = info;
    for (int r = 0; r < num_ranks; ++r) {
      const auto& actions = workers[static_cast<std::size_t>(r)]->timelines().at(k);
      timeline.actions.insert(timeline.actions.end(), actions.begin(), actions.end());
      const auto samples = recorders[static_cast<std::size_t>(r)]->samples(k);
      timeline.memory.insert(timeline.memory.end(), samples.begin(), samples.end());
    }
  }
  const std::size_t median = median_step(measured);
  result.timeline = std::move(measured[median]);
  result.timeline_step = o.steps - o.measured_steps + static_cast<int>(median);
  result.metrics = schedules::compute_metrics(result.timeline);
  for (const auto& stage : stages) {
    for (const auto& layer : stage->layers()) {
      auto& values = result.weights.emplace_back();
      for (const cpu::Parameter& p : layer->parameters()) {
        values.emplace_back(p.value.f32().begin(), p.value.f32().end());
      }
    }
  }
  return result;
}

}  // namespace gpipe::exec
