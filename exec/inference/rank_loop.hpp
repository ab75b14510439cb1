// The loop one rank of a serving run runs (serving_rank.hpp says what
// it does and records), for every backend. `D` is the rank's device, the
// backend's side of the seam: a ServingDevice (serving_device.hpp). The
// CPU's (serving_rank.cpp) runs on its compute team, the CUDA backend's
// (exec/cuda/inference/cuda_serving.cpp) on its rank's SM partition.
#pragma once

#include <algorithm>
#include <exception>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/inference/serving_device.hpp"
#include "exec/inference/serving_rank.hpp"
#include "exec/layers/layer.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::inference {

// The sequences in flight, each with its own state (dit's cache=1): item r is
// sequence r mod B's, as it takes the place of item r - B.
[[nodiscard]] inline int sequence_count(const ServingRequest& rq) {
  return std::min(rq.workload.in_flight, rq.workload.requests);
}

namespace rank_loop {

// What every backend's device does with its stage's layers (a vector of
// pointers to exec::Layer<Tensor>): the forward through all of them, keeping
// nothing, and their sequences' state.
template <class Layers, class Tensor>
[[nodiscard]] Tensor forward_layers(Layers& layers, Tensor x, const Tensor* target) {
  for (std::size_t l = 0; l < layers.size(); ++l) {
    Stash<Tensor> dropped;  // inference keeps nothing for a backward
    x = layers[l]->forward(std::move(x), l + 1 == layers.size() ? target : nullptr, dropped, nullptr);
  }
  return x;
}

template <class Layers>
[[nodiscard]] std::int64_t start_layer_sequences(Layers& layers, int sequences, int b) {
  std::int64_t bytes = 0;
  for (auto& layer : layers) bytes += layer->start_sequences(sequences, b, nullptr);
  return bytes;
}

template <class Layers>
void select_layer_sequence(Layers& layers, int sequence) {
  for (auto& layer : layers) layer->select_sequence(sequence);
}

// The stage's forward `warmup` times before the run starts, so that its
// first items do not pay for first touches (pages, BLAS buffers, kernels):
// stage 0 on the task's data, later stages on zeros of their input's shape.
template <ServingDevice D>
void warm_up(const ServingRequest& rq, D& device, const SyntheticTask& task, bool first_stage, bool last,
             const models::Layer& first_layer) {
  const int b = rq.micro_batch_size;
  const Batch batch = task.batch(rq.workload.requests, b);  // a batch no item uses
  const typename D::Tensor target = last ? device.input(batch.targets.clone()) : typename D::Tensor();
  for (int w = 0; w < rq.warmup_items; ++w) {
    typename D::Tensor x = first_stage ? device.input(batch.inputs.clone())
                                       : device.zeros(models::layer_layout(*rq.model, first_layer).kept_shape(0, b));
    (void)device.forward(std::move(x), last ? &target : nullptr);
  }
}

// Builds and warms the stage, then makes its layers' state for the sequences,
// zeroed (the warm-up's forwards touched none of it); whatever happens, the
// rank reaches the start line.
template <ServingDevice D>
void ready(const ServingRequest& rq, int s, bool last, const SyntheticTask& task, D& device,
           ServingPeersOf<typename D::Tensor>& peers, RankRecord& record) {
  const int first = std::accumulate(rq.layers_per_stage.begin(), rq.layers_per_stage.begin() + s, 0);
  const int end = first + rq.layers_per_stage[static_cast<std::size_t>(s)];
  try {
    device.build(rq, first, end);
  } catch (const std::exception& e) {
    peers.start_line();
    throw RunError(fmt::format("rank {} failed building its stage: {}", s, e.what()));
  }
  try {
    warm_up(rq, device, task, s == 0, last, rq.model->layers[static_cast<std::size_t>(first)]);
    record.state_bytes = device.start_sequences(sequence_count(rq), rq.micro_batch_size);
  } catch (const std::exception& e) {
    peers.start_line();
    throw RunError(fmt::format("rank {} failed warming up: {}", s, e.what()));
  }
  peers.start_line();
}

}  // namespace rank_loop

template <ServingDevice D>
void run_serving_rank_on(D& device, const ServingRequest& rq, int s, int num_stages,
                        ServingPeersOf<typename D::Tensor>& peers, RankRecord& record) {
  using Tensor = typename D::Tensor;
  using schedules::ActionKind;
  using schedules::Microbatch;
  using schedules::Stage;
  using timelines::Stream;
  const SyntheticTask task(*rq.model, rq.seed);
  const bool last = s + 1 == num_stages;
  const auto R = static_cast<std::size_t>(rq.workload.requests);
  const auto at = [](int item) { return static_cast<std::size_t>(item); };
  record = RankRecord{};
  record.stage = s;
  record.arrival_ns.assign(s == 0 ? R : 0, -1);
  record.admitted_ns.assign(s == 0 ? R : 0, -1);
  record.received_ns.assign(s > 0 ? R : 0, -1);
  record.received_bytes.assign(s > 0 ? R : 0, 0);
  record.completed_ns.assign(last ? R : 0, -1);
  if (last && rq.keep_outputs) record.outputs.resize(R);
  rank_loop::ready(rq, s, last, task, device, peers, record);
  const int sequences = sequence_count(rq);

  const schedules::Rank rank{s};
  int item = 0;
  try {
    for (; item < rq.workload.requests; ++item) {
      const Microbatch m{item};
      // The last stage's target is drawn while its input is on the way, not after.
      const Tensor target = last ? device.input(task.batch(item, rq.micro_batch_size).targets) : Tensor();
      Tensor input;
      std::int64_t input_bytes = 0;
      if (s == 0) {
        input = device.input(task.batch(item, rq.micro_batch_size).inputs);
        const Admission::Entry entry = peers.admit(item);
        record.arrival_ns[at(item)] = entry.arrival_ns;
        record.admitted_ns[at(item)] = entry.admitted_ns;
      } else {
        typename ServingPeersOf<Tensor>::Received got = peers.receive(s, item);
        input = std::move(got.tensor);
        input_bytes = input.bytes();
        record.received_ns[at(item)] = got.arrived_ns;
        record.received_bytes[at(item)] = input_bytes;  // counted from its arrival (assemble_serving)
      }
      device.select_sequence(item % sequences);
      const std::int64_t start = peers.now_ns();
      Tensor x = device.forward(std::move(input), last ? &target : nullptr);
      const std::int64_t stop = peers.now_ns();
      record.busy_ns += stop - start;
      record.actions.push_back({{Stage{s}, ActionKind::F, m}, rank, Stream::compute, start, stop});
      record.changes.push_back({start, x.bytes()});
      if (s > 0) record.changes.push_back({stop, -input_bytes});
      if (last) {
        record.changes.push_back({stop, -x.bytes()});
        record.completed_ns[at(item)] = stop;
        peers.completed(item, stop);
        if (rq.keep_outputs) record.outputs[at(item)] = device.to_host(x);
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

}  // namespace gpipe::exec::inference
