#include "exec/cuda/inference/cuda_serving.hpp"

#include <chrono>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "exec/cuda/backend/in_process_device_link.hpp"
#include "exec/cuda/backend/rank_device.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/green_context.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/inference/admission.hpp"
#include "exec/inference/rank_loop.hpp"
#include "exec/inference/serving_device.hpp"
#include "exec/inference/serving_rank.hpp"
#include "exec/runtime/aborted.hpp"

namespace gpipe::exec::cuda {
namespace {

using Clock = std::chrono::steady_clock;
using inference::Admission;
using inference::RankRecord;
using inference::ServingRequest;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;

// The CUDA backend's side of the rank loop: the layers on the rank's
// partition, each forward waited for on its compute stream.
class CudaServingDevice {
 public:
  using Tensor = DeviceTensor;

  explicit CudaServingDevice(RankDevice& device) : device_(device) {}

  void build(const ServingRequest& rq, int first, int end) {
    device_.enter_thread();
    for (int l = first; l < end; ++l) layers_.push_back(make_device_layer(*rq.model, l, rq.seed, device_.context()));
    device_.compute().synchronize();
  }
  [[nodiscard]] Tensor input(exec::Tensor host) { return device_.upload(host); }
  [[nodiscard]] Tensor zeros(std::vector<std::int64_t> shape) {
    DeviceTensor t(device_.allocator(), std::move(shape), DeviceType::f32);
    t.zero(device_.compute());
    return t;
  }
  [[nodiscard]] Tensor forward(Tensor x, const Tensor* target) {
    Tensor y = inference::rank_loop::forward_layers(layers_, std::move(x), target);
    device_.compute().synchronize();  // the host clock sees the forward's end
    return y;
  }
  [[nodiscard]] std::int64_t start_sequences(int sequences, int b) {
    return inference::rank_loop::start_layer_sequences(layers_, sequences, b);
  }
  void select_sequence(int sequence) { inference::rank_loop::select_layer_sequence(layers_, sequence); }
  [[nodiscard]] exec::Tensor to_host(const Tensor& x) { return x.to_host(device_.compute()); }

 private:
  RankDevice& device_;
  std::vector<std::unique_ptr<DeviceLayer>> layers_;
};
static_assert(inference::ServingDevice<CudaServingDevice>);

// What every rank's thread shares.
struct Shared {
  Shared(std::vector<std::int64_t> arrivals, const schedules::Workload& w, std::vector<RankDevice*> devices,
         MessageShapes shapes)
      : admission(std::move(arrivals), w.in_flight, w.closed_loop()),
        link(std::move(devices), std::move(shapes), nullptr) {}

  Admission admission;
  InProcessDeviceLink link;
  Clock::time_point origin;
  std::latch go{1};  // the origin is set: the run starts
  std::mutex failure_mutex;
  std::optional<std::string> failure;

  void fail(std::string line) {
    {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::move(line);
    }
    admission.abort();
    link.abort();
  }
};

// One rank's thread's peers. A receive waits on the host for the copy into
// this rank's memory: the input has arrived when the receive returns.
class DevicePeers final : public inference::ServingPeersOf<DeviceTensor> {
 public:
  DevicePeers(Shared& shared, std::latch& built, RankDevice& device)
      : shared_(shared), built_(built), device_(device) {}

  void start_line() override {
    built_.count_down();
    shared_.go.wait();
  }
  [[nodiscard]] std::int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - shared_.origin).count();
  }
  [[nodiscard]] Admission::Entry admit(int item) override { return shared_.admission.admit(item); }
  void completed(int item, std::int64_t completed_ns) override { shared_.admission.completed(item, completed_ns); }
  [[nodiscard]] Received receive(int stage, int item) override {
    Arrival arrival = shared_.link.receive(Rank{stage}, Rank{stage - 1}, tag(stage - 1, item), {Rank{stage}, -1, 0, {}});
    if (arrival.ready) arrival.ready->synchronize();
    const std::int64_t arrived = now_ns();
    return {device_.ready(std::move(arrival)), arrived};
  }
  void send(int stage, int item, std::int64_t /*handed_ns*/, DeviceTensor activation) override {
    shared_.link.send(Rank{stage}, Rank{stage + 1}, tag(stage, item), std::move(activation), {Rank{stage}, -1, 0, {}});
  }

 private:
  static MessageTag tag(int from_stage, int item) {
    return {0, MessageKind::activation, Stage{from_stage}, Microbatch{item}};
  }

  Shared& shared_;
  std::latch& built_;
  RankDevice& device_;
};

}  // namespace

inference::ServingResult run_cuda_serving(const ServingRequest& rq, const CudaServingOptions& options) {
  inference::check_serving_request(rq);
  if (rq.model->attention_cache) {
    throw InputError("dit's cache=1 runs on the CPU backend (gpipe-run infer --backend cpu), not yet on CUDA");
  }
  require_device();
  use_device(options.device);
  const int K = static_cast<int>(rq.layers_per_stage.size());
  SmPartitions partitions = SmPartitions::create(options.device, K, options.sm_per_stage);
  CudaDeviceMemory memory(options.device);
  std::vector<std::unique_ptr<RankDevice>> devices(static_cast<std::size_t>(K));
  std::vector<RankDevice*> by_rank;
  for (int r = 0; r < K; ++r) {
    const SmPartitions::ThreadBinding binding(partitions, r);
    auto device = std::make_unique<RankDevice>(options.device, partitions.stream(r), memory, false);
    device->set_thread_binding([&partitions, r] { partitions.bind_thread(r); });
    by_rank.push_back(device.get());
    devices[static_cast<std::size_t>(r)] = std::move(device);
  }
  // Every message is an item's activation, of b samples.
  MessageShapes shapes(*rq.model, std::vector<int>(static_cast<std::size_t>(rq.workload.requests), rq.micro_batch_size));
  Shared shared(schedules::arrival_times_ns(rq.workload), rq.workload, std::move(by_rank), std::move(shapes));
  std::latch built(K);
  std::vector<RankRecord> records(static_cast<std::size_t>(K));
  {
    std::vector<std::jthread> ranks;
    for (int s = 0; s < K; ++s) {
      ranks.emplace_back([&, s] {
        RankDevice& rank_device = *devices[static_cast<std::size_t>(s)];
        DevicePeers peers(shared, built, rank_device);
        try {
          CudaServingDevice device(rank_device);
          inference::run_serving_rank_on(device, rq, s, K, peers, records[static_cast<std::size_t>(s)]);
        } catch (const Aborted&) {
          // another rank has the run's error
        } catch (const std::exception& e) {
          shared.fail(e.what());
        }
      });
    }
    // Every rank has built and warmed its stage: the run starts now.
    built.wait();
    shared.origin = Clock::now();
    shared.admission.start(shared.origin);
    shared.go.count_down();
  }
  for (const auto& device : devices) device->drain();
  if (shared.failure) throw RunError(*shared.failure);
  return inference::assemble_serving(rq, std::move(records), device_name(options.device), "cuda");
}

}  // namespace gpipe::exec::cuda
