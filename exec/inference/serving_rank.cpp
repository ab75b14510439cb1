#include "exec/inference/serving_rank.hpp"

#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/inference/rank_loop.hpp"
#include "exec/inference/serving_device.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::inference {
namespace {

using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;
using timelines::Stream;

// The CPU's side of the rank loop (rank_loop.hpp): host tensors, the layers
// computing on the rank's team, each forward done when it returns.
class CpuServingDevice {
 public:
  using Tensor = exec::Tensor;

  CpuServingDevice(int threads, SpinBudget spin) : device_(threads, spin) {}

  void build(const ServingRequest& rq, int first, int end) {
    device_.enter_thread();
    for (int l = first; l < end; ++l) layers_.push_back(cpu::make_layer(*rq.model, l, rq.seed));
  }
  [[nodiscard]] Tensor input(Tensor host) const { return host; }
  [[nodiscard]] Tensor zeros(std::vector<std::int64_t> shape) const { return Tensor(std::move(shape)); }
  [[nodiscard]] Tensor forward(Tensor x, const Tensor* target) {
    return rank_loop::forward_layers(layers_, std::move(x), target);
  }
  [[nodiscard]] std::int64_t start_sequences(int sequences, int b) {
    return rank_loop::start_layer_sequences(layers_, sequences, b);
  }
  void select_sequence(int sequence) { rank_loop::select_layer_sequence(layers_, sequence); }
  [[nodiscard]] Tensor to_host(Tensor& x) const { return std::move(x); }

 private:
  cpu::CpuBackend::RankDevice device_;
  std::vector<std::unique_ptr<cpu::Layer>> layers_;
};
static_assert(ServingDevice<CpuServingDevice>);

}  // namespace

void check_serving_request(const ServingRequest& rq) {
  schedules::validate_workload(rq.workload);
  const int K = static_cast<int>(rq.layers_per_stage.size());
  if (K < 1 || std::accumulate(rq.layers_per_stage.begin(), rq.layers_per_stage.end(), 0) !=
                   static_cast<int>(rq.model->layers.size())) {
    throw InputError(fmt::format("--partition {}: it must give every one of the model's {} layers to a stage",
                                 fmt::join(rq.layers_per_stage, ","), rq.model->layers.size()));
  }
}

void run_serving_rank(const ServingRequest& rq, int s, int num_stages, ServingPeers& peers, RankRecord& record) {
  // This thread's compute team, whose helpers poll where every rank's threads have a core.
  CpuServingDevice device(rq.threads_per_rank, cpu::polling_budget(num_stages * rq.threads_per_rank));
  run_serving_rank_on(device, rq, s, num_stages, peers, record);
}

std::vector<std::int64_t> stage_weight_bytes(const ServingRequest& rq) {
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

ServingResult assemble_serving(const ServingRequest& rq, std::vector<RankRecord> records, const std::string& device,
                             const std::string& source) {
  const int K = static_cast<int>(records.size());
  const auto R = static_cast<std::size_t>(rq.workload.requests);
  ServingResult result;
  timelines::ServingRun& run = result.run;
  timelines::Timeline& timeline = run.timeline;
  run.items.resize(R);
  for (std::size_t r = 0; r < R; ++r) {
    run.items[r] = {records.front().arrival_ns.at(r), records.front().admitted_ns.at(r),
                    records.back().completed_ns.at(r)};
  }
  for (int s = 0; s < K; ++s) {
    RankRecord& record = records[static_cast<std::size_t>(s)];
    if (s > 0) {
      // Each item's RECV_F, from its sender's SEND_F start, and its input from its arrival.
      for (const timelines::TimedAction& a : records[static_cast<std::size_t>(s - 1)].actions) {
        if (a.action.kind != ActionKind::SEND_F) continue;
        const auto item = static_cast<std::size_t>(a.action.microbatch.value);
        const std::int64_t received = record.received_ns.at(item);
        timeline.actions.push_back({{Stage{s}, ActionKind::RECV_F, a.action.microbatch}, Rank{s}, Stream::recv,
                                    a.start_ns, std::max(a.end_ns, received)});
        record.changes.push_back({std::min(received, a.end_ns), record.received_bytes.at(item)});
      }
    }
    run.busy_ns.push_back(record.busy_ns);
    // The sequences' state is held from the start, as the simulator counts it.
    run.state_bytes.push_back(record.state_bytes);
    run.peak_bytes.push_back(timelines::peak_of(Rank{s}, record.state_bytes, record.changes, &timeline.memory));
    timeline.actions.insert(timeline.actions.end(), record.actions.begin(), record.actions.end());
  }
  if (rq.keep_outputs) result.outputs = std::move(records.back().outputs);
  result.static_bytes = stage_weight_bytes(rq);
  timeline.info = timelines::serving_info(K, rq.workload.requests, rq.micro_batch_size, source, device,
                                         result.static_bytes);
  return result;
}

std::string to_json_text(const RankRecord& r) {
  nlohmann::json actions = nlohmann::json::array();
  for (const timelines::TimedAction& a : r.actions) {
    actions.push_back({a.action.kind == ActionKind::F ? 0 : 1, a.action.microbatch.value, a.start_ns, a.end_ns});
  }
  nlohmann::json changes = nlohmann::json::array();
  for (const timelines::MemoryChange& c : r.changes) changes.push_back({c.time_ns, c.delta});
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
