#include "exec/cuda/profiler/layer_profiler.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/cupti/cupti_activity_source.hpp"
#include "exec/cuda/layers/blas.hpp"
#include "exec/cuda/layers/device_optimizer.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/profiler/call_tagger.hpp"
#include "exec/cuda/profiler/layer_timings.hpp"
#include "exec/profiling/profile_assembly.hpp"
#include "exec/profiling/profiler_inputs.hpp"
#include "exec/layers/memory_account.hpp"

namespace gpipe::exec::cuda::profiler {
namespace {

DeviceType device_type_of(const Tensor& t) {
  return t.type() == ElementType::i32 ? DeviceType::i32 : DeviceType::f32;
}

DeviceTensor upload(const Tensor& host, CachingAllocator& allocator, const Stream& stream) {
  if (host.empty()) return {};
  return DeviceTensor::from_host(allocator, host, device_type_of(host), stream);
}

// A device-side copy, charged to none: every pass needs its own input, since
// a forward moves its input into the stash.
DeviceTensor device_copy(const DeviceTensor& t, CachingAllocator& allocator, const Stream& stream) {
  DeviceTensor copy(allocator, t.shape(), t.type());
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(copy.raw(), t.raw(), static_cast<std::size_t>(t.bytes()),
                                   cudaMemcpyDeviceToDevice, stream.get()));
  return copy;
}

// The model's layers on the device, with their optimizer state.
struct DeviceModel {
  LayerContext context;
  std::vector<std::unique_ptr<DeviceLayer>> layers;
  std::vector<DeviceOptimizerState> optimizers;
};

// One micro-batch size: its data on the device and the bytes measured at it.
struct DeviceSize {
  int b = 0;
  DeviceTensor input;                 // pristine; each pass runs on a copy
  std::vector<DeviceTensor> targets;  // per layer; empty but for a loss layer
  DeviceTensor grad_output;           // made at the first pass, from the output's shape
  std::vector<profiles::ProfileSample> samples;  // per layer
};

// One pass of the whole model at one size, as a single-stage run executes a
// micro-batch: forwards in model order, backwards in reverse, then the steps.
// Nothing waits for the GPU inside the pass: CUPTI times each call on the device.
void run_pass(DeviceModel& dm, const models::Model& model, DeviceSize& s, CallTagger& tagger, int repeat,
              bool first, std::mt19937_64& rng) {
  const std::size_t n = dm.layers.size();
  const LayerContext& ctx = dm.context;
  std::vector<MemoryAccount> accounts(n);  // one per layer: its stash alone
  std::vector<DeviceStash> stashes(n);
  DeviceTensor x = device_copy(s.input, *ctx.allocator, *ctx.stream);
  for (std::size_t i = 0; i < n; ++i) {
    const int layer = static_cast<int>(i);
    const std::int64_t in_bytes = x.bytes();
    const DeviceTensor* target = s.targets[i].empty() ? nullptr : &s.targets[i];
    DeviceTensor out;
    tagger.run({layer, s.b, Phase::forward, repeat},
               [&] { out = dm.layers[i]->forward(std::move(x), target, stashes[i], &accounts[i]); });
    record_sample_bytes(s.samples[i], first, dm.layers[i]->spec(), s.b, in_bytes, out.bytes(), accounts[i].bytes());
    x = std::move(out);
  }
  if (s.grad_output.empty()) {
    s.grad_output = upload(output_gradient(x.shape(), model.layers.back(), s.b, rng), *ctx.allocator, *ctx.stream);
  }
  DeviceTensor grad;
  for (std::size_t i = n; i-- > 0;) {
    const DeviceTensor& grad_output = i + 1 == n ? s.grad_output : grad;
    DeviceTensor grad_input;
    tagger.run({static_cast<int>(i), s.b, Phase::backward, repeat},
               [&] { grad_input = dm.layers[i]->backward(std::move(stashes[i]), grad_output); });
    grad = std::move(grad_input);  // the old gradient's block is reused in stream order
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (dm.layers[i]->parameters().empty()) continue;  // nothing to step: optimizer_us stays 0
    tagger.run({static_cast<int>(i), s.b, Phase::step, repeat},
               [&] { dm.optimizers[i].step(dm.layers[i]->parameters()); });
  }
}

// The model's layers and every size's inputs on one partition's stream.
struct Replica {
  DeviceModel dm;
  std::vector<DeviceSize> runs;
};

void build_replica(Replica& replica, const models::Model& model, std::span<const int> sizes,
                   const CudaProfilerOptions& options, CachingAllocator& allocator, BlasHandle* blas,
                   Stream& stream) {
  DeviceModel& dm = replica.dm;
  dm.context = LayerContext{&allocator, blas, &stream};
  const int count = static_cast<int>(model.layers.size());
  for (int index = 0; index < count; ++index) {
    dm.layers.push_back(make_device_layer(model, index, options.seed, dm.context));
    dm.optimizers.emplace_back(options.optimizer, dm.layers.back()->parameters(), allocator, stream);
  }
  for (const int b : sizes) {
    const SizeInputs host = training_size_inputs(model, b, options.seed);
    DeviceSize& s = replica.runs.emplace_back();
    s.b = b;
    s.input = upload(host.input, allocator, stream);
    for (const Tensor& t : host.targets) s.targets.push_back(upload(t, allocator, stream));
    s.samples.resize(static_cast<std::size_t>(count));
  }
}

// While partition 0 is timed, the other K - 1 partitions run the same passes
// on replicas of the model, untimed: in a pipeline's steady state every
// stage computes at once, and the stages share the GPU's memory bandwidth and
// L2, so a layer runs a few per cent slower than on an idle GPU (measured on
// an H200 at K = 4: forwards 2 %, backwards 4 %). A replica that does not fit
// in memory is left out, and said so.
class PartitionLoad {
 public:
  PartitionLoad(SmPartitions& partitions, CudaDeviceMemory& memory, const models::Model& model,
                std::span<const int> sizes, const CudaProfilerOptions& options) {
    if (!partitions.green()) return;  // plain streams share every SM: nothing to load apart
    try {
      for (int p = 1; p < partitions.size(); ++p) {
        threads_.emplace_back([this, &partitions, &memory, &model, sizes, &options, p] {
          work(partitions, memory, model, sizes, options, p);
        });
      }
    } catch (...) {
      stop();  // the threads started so far, before the exception leaves
      throw;
    }
    // Timing starts once every replica is built and running (or has failed).
    std::unique_lock lock(mutex_);
    started_.wait(lock, [this] { return ready_count_ == threads_.size(); });
  }
  ~PartitionLoad() { stop(); }
  PartitionLoad(const PartitionLoad&) = delete;
  PartitionLoad& operator=(const PartitionLoad&) = delete;

  // Stops the load and waits for it; returns the partitions that ran it to the end.
  int stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    return loaded_;
  }
  [[nodiscard]] const std::vector<std::string>& failures() const { return failures_; }

 private:
  void work(SmPartitions& partitions, CudaDeviceMemory& memory, const models::Model& model,
            std::span<const int> sizes, const CudaProfilerOptions& options, int p) {
    bool counted = false;
    const auto report_ready = [&](const std::string& failure) {
      const std::scoped_lock lock(mutex_);
      if (failure.empty()) {
        ++loaded_;
      } else {
        failures_.push_back(fmt::format("partition {}: {}", p, failure));
      }
      ++ready_count_;
      counted = true;
      started_.notify_all();
    };
    try {
      const SmPartitions::ThreadBinding binding(partitions, p);
      Stream& stream = partitions.stream(p);
      CachingAllocator allocator(memory);
      const layers::OwnedBlasHandle blas = layers::make_blas_handle();
      // Each replica's output gradients from a generator of its own.
      std::mt19937_64 rng = output_gradient_generator(options.seed ^ static_cast<std::uint64_t>(p));
      Replica replica;
      build_replica(replica, model, sizes, options, allocator, blas.get(), stream);
      CallTagger untagged;  // never tagged: CUPTI's records of the load match no call
      for (DeviceSize& s : replica.runs) run_pass(replica.dm, model, s, untagged, 0, true, rng);
      stream.synchronize();
      report_ready("");
      while (!stop_) {
        for (DeviceSize& s : replica.runs) run_pass(replica.dm, model, s, untagged, 0, false, rng);
        stream.synchronize();
      }
    } catch (const std::exception& error) {
      if (!counted) {
        report_ready(error.what());
      } else {  // a failure after the start ends this partition's load early: not counted as loaded
        const std::scoped_lock lock(mutex_);
        --loaded_;
        failures_.push_back(fmt::format("partition {} stopped: {}", p, error.what()));
      }
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable started_;
  std::size_t ready_count_ = 0;
  int loaded_ = 0;
  std::vector<std::string> failures_;
};

void check_options(const CudaProfilerOptions& options) {
  check_pass_counts(options.warmup, options.repeats);
  if (options.stages < 1) throw InputError(fmt::format("--stages {}: need at least one stage", options.stages));
  if (options.sm_per_stage < 0) {
    throw InputError(fmt::format("--sm-per-stage {}: must not be negative", options.sm_per_stage));
  }
}

}  // namespace

profiles::Profile profile_cuda(const models::Model& model, std::span<const int> micro_batch_sizes,
                               const CudaProfilerOptions& options) {
  const std::vector<int> sizes = checked_micro_batch_sizes(micro_batch_sizes);
  check_options(options);
  require_device();

  SmPartitions partitions = SmPartitions::create(options.device, options.stages, options.sm_per_stage);
  if (options.on_partitions) options.on_partitions(partitions);
  // The whole profile runs in stage 0's green context: the events, handles
  // and streams made below belong to it, as an event must belong to the
  // context of the stream it is recorded on. Declared before them, so that
  // it is released after they are gone.
  const SmPartitions::ThreadBinding binding(partitions, 0);
  Stream& stream = partitions.stream(0);
  CudaDeviceMemory memory(options.device);
  CachingAllocator allocator(memory);
  const layers::OwnedBlasHandle blas = layers::make_blas_handle();

  // One generator for the output gradients (as the CPU profiler's).
  std::mt19937_64 rng = output_gradient_generator(options.seed);
  Replica timed;
  build_replica(timed, model, sizes, options, allocator, blas.get(), stream);
  DeviceModel& dm = timed.dm;
  std::vector<DeviceSize>& runs = timed.runs;
  const int count = static_cast<int>(model.layers.size());

  // Passes go round the sizes (b1, b2, ..., b1, b2, ...), as on the CPU: a
  // stretch of interference slows every size a little, not one size a lot.
  cupti::CuptiActivitySource source;
  CallTagger tagger;
  std::optional<PartitionLoad> load;
  if (options.load_other_partitions && partitions.size() > 1) {
    load.emplace(partitions, memory, model, sizes, options);
  }
  const int passes = options.warmup + options.repeats;
  for (int pass = 0; pass < passes; ++pass) {
    if (pass == options.warmup) {
      stream.synchronize();  // the warm-up's work stays out of the records
      source.start();
      tagger.tag_with(&source);
    }
    for (DeviceSize& s : runs) run_pass(dm, model, s, tagger, pass - options.warmup, pass == 0, rng);
    stream.synchronize();  // bounds the launch queue; no timing depends on it
    if (options.on_pass) options.on_pass(pass, passes);
  }
  if (load) {
    // Stopped before the records are read and the link is probed: a copy is
    // timed between otherwise idle partitions, as the link model assumes.
    const int loaded = load->stop();
    if (options.on_note) {
      options.on_note(fmt::format("timed in partition 0 while {} of the other {} partitions ran the same passes{}",
                                  loaded, partitions.size() - 1,
                                  load->failures().empty()
                                      ? std::string()
                                      : fmt::format(" ({} left out: {})", partitions.size() - 1 - loaded,
                                                    fmt::join(load->failures(), "; "))));
    }
  }
  const cupti::ActivityRecords records = source.stop();
  const LayerTimings timings = layer_timings(records, tagger.calls());
  require_complete(timings, tagger.calls());

  profiles::Profile profile = profile_header(model, device_name(options.device), "cupti");
  profile.layers = layer_profiles(dm.layers, runs);
  apply_timings(timings, profile.layers);
  if (options.on_layer) {
    for (int index = 0; index < count; ++index) {
      options.on_layer(index, count, profile.layers[static_cast<std::size_t>(index)]);
    }
  }
  // To the next stage's partition (the same one when K = 1: the copy runs on
  // its own stream either way).
  profile.link = probe_link(stream, partitions.stream(std::min(1, partitions.size() - 1)), allocator, source,
                            options.link);
  return profile;
}

}  // namespace gpipe::exec::cuda::profiler
