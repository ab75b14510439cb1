#include "exec/inference/cpu_stream.hpp"

#include <chrono>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/device_name.hpp"
#include "exec/cpu/in_process_link.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/inference/admission.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/layer_layout.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::inference {
namespace {

using Clock = std::chrono::steady_clock;
using schedules::Action;
using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;
using schedules::Stream;

// What every rank's thread shares.
struct Shared {
  const StreamRequest& request;
  int num_stages = 0;
  Admission admission;
  cpu::InProcessLink link;
  Clock::time_point origin;
  std::latch built;  // every rank has built and warmed its stage
  std::latch go;     // the origin is set: the stream starts
  // handed_ns[s][r]: when stage s handed item r's output on (ns from the start);
  // written before the send, read by the receiver after it.
  std::vector<std::vector<std::int64_t>> handed_ns;
  std::mutex failure_mutex;
  std::optional<std::string> failure;
};

// One rank's record, written by its thread alone.
struct RankRecord {
  std::vector<schedules::TimedAction> actions;
  std::vector<schedules::MemoryChange> changes;
  std::int64_t busy_ns = 0;
};

std::int64_t since(const Shared& shared) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - shared.origin).count();
}

// A rank is ready (or failed getting ready): it waits for the stream's start.
void start_line(Shared& shared) {
  shared.built.count_down();
  shared.go.wait();
}

// The run's first error ("rank R failed at item r: what"); the other ranks' waits end.
void fail(Shared& shared, std::string line) {
  {
    const std::lock_guard lock(shared.failure_mutex);
    if (!shared.failure) shared.failure = std::move(line);
  }
  shared.admission.abort();
  shared.link.abort();
}

// The stage's forward `warmup` times before the stream starts, so that its
// first items do not pay for first touches (pages, OpenBLAS's buffers):
// stage 0 on the task's data, later stages on zeros of their input's shape.
void warm_up(const StreamRequest& rq, std::vector<std::unique_ptr<cpu::Layer>>& layers, const SyntheticTask& task,
             bool first_stage, bool last) {
  const int b = rq.micro_batch_size;
  const Batch batch = task.batch(rq.workload.requests, b);  // a batch no item uses
  const models::Layer& first = layers.front()->spec();
  for (int w = 0; w < rq.warmup_items; ++w) {
    Tensor x = first_stage ? batch.inputs.clone()
                                : Tensor(models::layer_layout(*rq.model, first).kept_shape(0, b));
    for (std::size_t l = 0; l < layers.size(); ++l) {
      cpu::Stash dropped;
      x = layers[l]->forward(std::move(x), last && l + 1 == layers.size() ? &batch.targets : nullptr, dropped, nullptr);
    }
  }
}

void run_rank(Shared& shared, int s, RankRecord& record, std::vector<schedules::ItemTimes>& items,
              std::vector<Tensor>& outputs) {
  const StreamRequest& rq = shared.request;
  const models::Model& model = *rq.model;
  cpu::CpuBackend::RankDevice device(rq.threads_per_rank);
  std::vector<std::unique_ptr<cpu::Layer>> layers;
  // Building fails (out of memory) without leaving the others at the start line.
  try {
    device.enter_thread();
    const int first = std::accumulate(rq.layers_per_stage.begin(), rq.layers_per_stage.begin() + s, 0);
    const int end = first + rq.layers_per_stage[static_cast<std::size_t>(s)];
    for (int l = first; l < end; ++l) layers.push_back(cpu::make_layer(model, l, rq.seed));
  } catch (const std::exception& e) {
    start_line(shared);
    fail(shared, fmt::format("rank {} failed building its stage: {}", s, e.what()));
    return;
  }
  const SyntheticTask task(model, rq.seed);
  const bool last = s + 1 == shared.num_stages;
  const Rank rank{s};
  try {
    warm_up(rq, layers, task, s == 0, last);
  } catch (const std::exception& e) {
    start_line(shared);
    fail(shared, fmt::format("rank {} failed warming up: {}", s, e.what()));
    return;
  }
  start_line(shared);

  int item = 0;
  try {
    for (; item < rq.workload.requests; ++item) {
      const Microbatch m{item};
      // The last stage's target is drawn while its input is on the way, not after.
      const Tensor target = last ? task.batch(item, rq.micro_batch_size).targets : Tensor();
      Tensor input;
      std::int64_t input_bytes = 0;
      if (s == 0) {
        input = task.batch(item, rq.micro_batch_size).inputs;
        const Admission::Entry entry = shared.admission.admit(item);
        items[static_cast<std::size_t>(item)].arrival_ns = entry.arrival_ns;
        items[static_cast<std::size_t>(item)].admitted_ns = entry.admitted_ns;
      } else {
        input = shared.link.receive(rank, Rank{s - 1}, {0, MessageKind::activation, Stage{s - 1}, m}, {rank, -1, 0, {}});
        input_bytes = input.bytes();
        record.changes.push_back({shared.handed_ns[static_cast<std::size_t>(s - 1)][static_cast<std::size_t>(item)], input_bytes});
      }
      const std::int64_t start = since(shared);
      Tensor x = std::move(input);
      for (std::size_t l = 0; l < layers.size(); ++l) {
        cpu::Stash dropped;  // inference keeps nothing for a backward
        x = layers[l]->forward(std::move(x), last && l + 1 == layers.size() ? &target : nullptr, dropped, nullptr);
      }
      const std::int64_t stop = since(shared);
      record.busy_ns += stop - start;
      record.actions.push_back({{Stage{s}, ActionKind::F, m}, rank, Stream::compute, start, stop});
      record.changes.push_back({start, x.bytes()});
      if (s > 0) record.changes.push_back({stop, -input_bytes});
      if (last) {
        record.changes.push_back({stop, -x.bytes()});
        items[static_cast<std::size_t>(item)].completed_ns = stop;
        shared.admission.completed(item, stop);
        if (rq.keep_outputs) outputs[static_cast<std::size_t>(item)] = std::move(x);
        continue;
      }
      const std::int64_t bytes = x.bytes();
      const std::int64_t handed = since(shared);
      shared.handed_ns[static_cast<std::size_t>(s)][static_cast<std::size_t>(item)] = handed;
      shared.link.send(rank, Rank{s + 1}, {0, MessageKind::activation, Stage{s}, m}, std::move(x), {rank, -1, 0, {}});
      const std::int64_t sent = since(shared);
      record.changes.push_back({handed, -bytes});
      record.actions.push_back({{Stage{s}, ActionKind::SEND_F, m}, rank, Stream::send, handed, sent});
      record.actions.push_back({{Stage{s + 1}, ActionKind::RECV_F, m}, Rank{s + 1}, Stream::recv, handed, sent});
    }
  } catch (const Aborted&) {
    return;  // another rank has the run's error
  } catch (const std::exception& e) {
    fail(shared, fmt::format("rank {} failed at item {}: {}", s, item, e.what()));
  }
}

}  // namespace

StreamResult run_cpu_stream(const StreamRequest& rq) {
  const models::Model& model = *rq.model;
  schedules::validate_workload(rq.workload);
  const int K = static_cast<int>(rq.layers_per_stage.size());
  if (K < 1 || std::accumulate(rq.layers_per_stage.begin(), rq.layers_per_stage.end(), 0) !=
                   static_cast<int>(model.layers.size())) {
    throw InputError(fmt::format("--partition {}: it must give every one of the model's {} layers to a stage",
                                 fmt::join(rq.layers_per_stage, ","), model.layers.size()));
  }
  const auto R = static_cast<std::size_t>(rq.workload.requests);
  Shared shared{.request = rq,
                .num_stages = K,
                .admission = Admission(schedules::arrival_times_ns(rq.workload), rq.workload.in_flight,
                                       rq.workload.closed_loop()),
                .link = cpu::InProcessLink(K),
                .origin = {},
                .built = std::latch(K),
                .go = std::latch(1),
                .handed_ns = std::vector<std::vector<std::int64_t>>(static_cast<std::size_t>(K - 1),
                                                                   std::vector<std::int64_t>(R, 0)),
                .failure_mutex = {},
                .failure = {}};
  std::vector<RankRecord> records(static_cast<std::size_t>(K));
  StreamResult result;
  result.run.items.resize(R);
  if (rq.keep_outputs) result.outputs.resize(R);
  {
    std::vector<std::jthread> ranks;
    for (int s = 0; s < K; ++s) {
      ranks.emplace_back([&, s] { run_rank(shared, s, records[static_cast<std::size_t>(s)], result.run.items, result.outputs); });
    }
    // Every rank has built and warmed its stage: the stream starts now.
    shared.built.wait();
    shared.origin = Clock::now();
    shared.admission.start(shared.origin);
    shared.go.count_down();
  }
  if (shared.failure) throw RunError(*shared.failure);

  schedules::StreamRun& run = result.run;
  schedules::Timeline& timeline = run.timeline;
  for (int s = 0; s < K; ++s) {
    RankRecord& r = records[static_cast<std::size_t>(s)];
    run.busy_ns.push_back(r.busy_ns);
    run.state_bytes.push_back(0);
    run.peak_bytes.push_back(schedules::peak_of(Rank{s}, 0, r.changes, &timeline.memory));
    timeline.actions.insert(timeline.actions.end(), r.actions.begin(), r.actions.end());
  }
  int first = 0;
  for (int s = 0; s < K; ++s) {
    std::int64_t params = 0;
    for (int l = first; l < first + rq.layers_per_stage[static_cast<std::size_t>(s)]; ++l) {
      params += models::param_bytes(model.layers[static_cast<std::size_t>(l)], models::DType::fp32);
    }
    first += rq.layers_per_stage[static_cast<std::size_t>(s)];
    result.static_bytes.push_back(params);
  }
  timeline.info = schedules::stream_info(K, rq.workload.requests, rq.micro_batch_size, "cpu",
                                         cpu::device_name(rq.threads_per_rank), result.static_bytes);
  return result;
}

}  // namespace gpipe::exec::inference
