#include "exec/inference/stream_rank.hpp"

#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/layer_layout.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::inference {
namespace {

using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;
using schedules::Stream;

// The stage's forward `warmup` times before the stream starts, so that its
// first items do not pay for first touches (pages, OpenBLAS's buffers):
// stage 0 on the task's data, later stages on zeros of their input's shape.
void warm_up(const StreamRequest& rq, std::vector<std::unique_ptr<cpu::Layer>>& layers, const SyntheticTask& task,
             bool first_stage, bool last) {
  const int b = rq.micro_batch_size;
  const Batch batch = task.batch(rq.workload.requests, b);  // a batch no item uses
  const models::Layer& first = layers.front()->spec();
  for (int w = 0; w < rq.warmup_items; ++w) {
    Tensor x = first_stage ? batch.inputs.clone() : Tensor(models::layer_layout(*rq.model, first).kept_shape(0, b));
    for (std::size_t l = 0; l < layers.size(); ++l) {
      cpu::Stash dropped;
      x = layers[l]->forward(std::move(x), last && l + 1 == layers.size() ? &batch.targets : nullptr, dropped, nullptr);
    }
  }
}

// The streams in flight, each with its own state (dit's cache=1): item r is
// stream r mod B's, as it takes the place of item r - B.
int stream_count(const StreamRequest& rq) { return std::min(rq.workload.in_flight, rq.workload.requests); }

// Builds and warms the stage, then makes its layers' state for the streams,
// zeroed (the warm-up's forwards touched none of it); whatever happens, the
// rank reaches the start line.
std::vector<std::unique_ptr<cpu::Layer>> ready_stage(const StreamRequest& rq, int s, bool last,
                                                    const SyntheticTask& task, cpu::CpuBackend::RankDevice& device,
                                                    StreamPeers& peers, RankRecord& record) {
  std::vector<std::unique_ptr<cpu::Layer>> layers;
  try {
    device.enter_thread();
    const int first = std::accumulate(rq.layers_per_stage.begin(), rq.layers_per_stage.begin() + s, 0);
    const int end = first + rq.layers_per_stage[static_cast<std::size_t>(s)];
    for (int l = first; l < end; ++l) layers.push_back(cpu::make_layer(*rq.model, l, rq.seed));
  } catch (const std::exception& e) {
    peers.start_line();
    throw RunError(fmt::format("rank {} failed building its stage: {}", s, e.what()));
  }
  try {
    warm_up(rq, layers, task, s == 0, last);
    for (auto& layer : layers) record.state_bytes += layer->start_streams(stream_count(rq), rq.micro_batch_size, nullptr);
  } catch (const std::exception& e) {
    peers.start_line();
    throw RunError(fmt::format("rank {} failed warming up: {}", s, e.what()));
  }
  peers.start_line();
  return layers;
}

std::size_t at(int item) { return static_cast<std::size_t>(item); }

}  // namespace

void check_stream_request(const StreamRequest& rq) {
  schedules::validate_workload(rq.workload);
  const int K = static_cast<int>(rq.layers_per_stage.size());
  if (K < 1 || std::accumulate(rq.layers_per_stage.begin(), rq.layers_per_stage.end(), 0) !=
                   static_cast<int>(rq.model->layers.size())) {
    throw InputError(fmt::format("--partition {}: it must give every one of the model's {} layers to a stage",
                                 fmt::join(rq.layers_per_stage, ","), rq.model->layers.size()));
  }
}

void run_stream_rank(const StreamRequest& rq, int s, int num_stages, StreamPeers& peers, RankRecord& record) {
  const SyntheticTask task(*rq.model, rq.seed);
  const bool last = s + 1 == num_stages;
  const auto R = static_cast<std::size_t>(rq.workload.requests);
  record = RankRecord{};
  record.stage = s;
  record.arrival_ns.assign(s == 0 ? R : 0, -1);
  record.admitted_ns.assign(s == 0 ? R : 0, -1);
  record.received_ns.assign(s > 0 ? R : 0, -1);
  record.received_bytes.assign(s > 0 ? R : 0, 0);
  record.completed_ns.assign(last ? R : 0, -1);
  if (last && rq.keep_outputs) record.outputs.resize(R);
  // This thread's compute team, whose helpers poll where every rank's threads have a core.
  cpu::CpuBackend::RankDevice device(rq.threads_per_rank, cpu::polling_budget(num_stages * rq.threads_per_rank));
  std::vector<std::unique_ptr<cpu::Layer>> layers = ready_stage(rq, s, last, task, device, peers, record);
  const int streams = stream_count(rq);

  const Rank rank{s};
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
        const Admission::Entry entry = peers.admit(item);
        record.arrival_ns[at(item)] = entry.arrival_ns;
        record.admitted_ns[at(item)] = entry.admitted_ns;
      } else {
        StreamPeers::Received got = peers.receive(s, item);
        input = std::move(got.tensor);
        input_bytes = input.bytes();
        record.received_ns[at(item)] = got.arrived_ns;
        record.received_bytes[at(item)] = input_bytes;  // counted from its arrival (assemble_stream)
      }
      for (auto& layer : layers) layer->select_stream(item % streams);
      const std::int64_t start = peers.now_ns();
      Tensor x = std::move(input);
      for (std::size_t l = 0; l < layers.size(); ++l) {
        cpu::Stash dropped;  // inference keeps nothing for a backward
        x = layers[l]->forward(std::move(x), last && l + 1 == layers.size() ? &target : nullptr, dropped, nullptr);
      }
      const std::int64_t stop = peers.now_ns();
      record.busy_ns += stop - start;
      record.actions.push_back({{Stage{s}, ActionKind::F, m}, rank, Stream::compute, start, stop});
      record.changes.push_back({start, x.bytes()});
      if (s > 0) record.changes.push_back({stop, -input_bytes});
      if (last) {
        record.changes.push_back({stop, -x.bytes()});
        record.completed_ns[at(item)] = stop;
        peers.completed(item, stop);
        if (rq.keep_outputs) record.outputs[at(item)] = std::move(x);
        continue;
      }
      const std::int64_t bytes = x.bytes();
      const std::int64_t handed = peers.now_ns();
      peers.send(s, item, handed, std::move(x));
      const std::int64_t sent = peers.now_ns();
      record.changes.push_back({handed, -bytes});
      record.actions.push_back({{Stage{s}, ActionKind::SEND_F, m}, rank, Stream::send, handed, sent});
    }
  } catch (const Aborted&) {
    throw;  // another rank has the run's error
  } catch (const PeerFailed&) {
    throw;  // another process's error line, as it said it
  } catch (const std::exception& e) {
    throw RunError(fmt::format("rank {} failed at item {}: {}", s, item, e.what()));
  }
}

std::vector<std::int64_t> stage_weight_bytes(const StreamRequest& rq) {
  std::vector<std::int64_t> bytes;
  int first = 0;
  for (const int count : rq.layers_per_stage) {
    std::int64_t params = 0;
    for (int l = first; l < first + count; ++l) {
      params += models::param_bytes(rq.model->layers[static_cast<std::size_t>(l)], models::DType::fp32);
    }
    first += count;
    bytes.push_back(params);
  }
  return bytes;
}

StreamResult assemble_stream(const StreamRequest& rq, std::vector<RankRecord> records, const std::string& device) {
  const int K = static_cast<int>(records.size());
  const auto R = static_cast<std::size_t>(rq.workload.requests);
  StreamResult result;
  schedules::StreamRun& run = result.run;
  schedules::Timeline& timeline = run.timeline;
  run.items.resize(R);
  for (std::size_t r = 0; r < R; ++r) {
    run.items[r] = {records.front().arrival_ns.at(r), records.front().admitted_ns.at(r),
                    records.back().completed_ns.at(r)};
  }
  for (int s = 0; s < K; ++s) {
    RankRecord& record = records[static_cast<std::size_t>(s)];
    if (s > 0) {
      // Each item's RECV_F, from its sender's SEND_F start, and its input from its arrival.
      for (const schedules::TimedAction& a : records[static_cast<std::size_t>(s - 1)].actions) {
        if (a.action.kind != ActionKind::SEND_F) continue;
        const auto item = static_cast<std::size_t>(a.action.microbatch.value);
        const std::int64_t received = record.received_ns.at(item);
        timeline.actions.push_back({{Stage{s}, ActionKind::RECV_F, a.action.microbatch}, Rank{s}, Stream::recv,
                                    a.start_ns, std::max(a.end_ns, received)});
        record.changes.push_back({std::min(received, a.end_ns), record.received_bytes.at(item)});
      }
    }
    run.busy_ns.push_back(record.busy_ns);
    // The streams' state is held from the start, as the simulator counts it.
    run.state_bytes.push_back(record.state_bytes);
    run.peak_bytes.push_back(schedules::peak_of(Rank{s}, record.state_bytes, record.changes, &timeline.memory));
    timeline.actions.insert(timeline.actions.end(), record.actions.begin(), record.actions.end());
  }
  if (rq.keep_outputs) result.outputs = std::move(records.back().outputs);
  result.static_bytes = stage_weight_bytes(rq);
  timeline.info = schedules::stream_info(K, rq.workload.requests, rq.micro_batch_size, "cpu", device,
                                         result.static_bytes);
  return result;
}

std::string to_json_text(const RankRecord& r) {
  nlohmann::json actions = nlohmann::json::array();
  for (const schedules::TimedAction& a : r.actions) {
    actions.push_back({a.action.kind == ActionKind::F ? 0 : 1, a.action.microbatch.value, a.start_ns, a.end_ns});
  }
  nlohmann::json changes = nlohmann::json::array();
  for (const schedules::MemoryChange& c : r.changes) changes.push_back({c.time_ns, c.delta});
  return nlohmann::json{{"stage", r.stage},
                        {"busy_ns", r.busy_ns},
                        {"state_bytes", r.state_bytes},
                        {"actions", actions},
                        {"changes", changes},
                        {"arrival_ns", r.arrival_ns},
                        {"admitted_ns", r.admitted_ns},
                        {"received_ns", r.received_ns},
                        {"received_bytes", r.received_bytes},
                        {"completed_ns", r.completed_ns}}
      .dump();
}

RankRecord parse_rank_record(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  RankRecord r;
  r.stage = j.at("stage").get<int>();
  r.busy_ns = j.at("busy_ns").get<std::int64_t>();
  r.state_bytes = j.at("state_bytes").get<std::int64_t>();
  const Rank rank{r.stage};
  for (const auto& a : j.at("actions")) {
    const bool forward = a.at(0).get<int>() == 0;
    r.actions.push_back({{Stage{r.stage}, forward ? ActionKind::F : ActionKind::SEND_F, Microbatch{a.at(1).get<int>()}},
                         rank, forward ? Stream::compute : Stream::send, a.at(2).get<std::int64_t>(),
                         a.at(3).get<std::int64_t>()});
  }
  for (const auto& c : j.at("changes")) r.changes.push_back({c.at(0).get<std::int64_t>(), c.at(1).get<std::int64_t>()});
  r.arrival_ns = j.at("arrival_ns").get<std::vector<std::int64_t>>();
  r.admitted_ns = j.at("admitted_ns").get<std::vector<std::int64_t>>();
  r.received_ns = j.at("received_ns").get<std::vector<std::int64_t>>();
  r.received_bytes = j.at("received_bytes").get<std::vector<std::int64_t>>();
  r.completed_ns = j.at("completed_ns").get<std::vector<std::int64_t>>();
  return r;
}

}  // namespace gpipe::exec::inference
