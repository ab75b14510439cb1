#include "exec/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "exec/cpu/layer.hpp"
#include "exec/in_process_transport.hpp"
#include "exec/trainer.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The shape of a tensor of `elems` floating elements per sample: [b, S, elems/S]
// for a sequence model (every floating tensor of a transformer is per token),
// [b, elems] otherwise.
std::vector<std::int64_t> float_shape(const models::Model& model, int b, std::int64_t elems) {
  if (model.seq > 0 && elems % model.seq == 0) {
    return {b, model.seq, elems / model.seq};
  }
  return {b, elems};
}

// Random values of the shapes a layer reads, drawn once per (layer, size).
struct LayerInputs {
  Tensor input;
  Tensor target;  // empty unless a loss layer
};

Tensor random_tokens(std::int64_t b, std::int64_t per_sample, int vocab, std::mt19937_64& rng) {
  Tensor t({b, per_sample}, ElementType::i32);
  std::uniform_int_distribution<std::int32_t> token(0, std::max(vocab, 1) - 1);
  for (auto& v : t.i32()) v = token(rng);
  return t;
}

Tensor random_normal(std::vector<std::int64_t> shape, float scale, std::mt19937_64& rng) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> normal(0.0F, scale);
  for (auto& v : t.f32()) v = normal(rng);
  return t;
}

LayerInputs random_inputs(const models::Model& model, const models::Layer& layer, int b,
                          std::mt19937_64& rng) {
  LayerInputs in;
  if (layer.input_index_bytes > 0) {
    in.input = random_tokens(b, layer.input_index_bytes / 4, model.vocab, rng);
  } else {
    in.input = random_normal(float_shape(model, b, layer.input_elems), 1.0F, rng);
  }
  if (layer.target_index_bytes > 0) {
    in.target = random_tokens(b, layer.target_index_bytes / 4, model.vocab, rng);
  } else if (layer.target_elems > 0) {
    in.target = random_normal(float_shape(model, b, layer.target_elems), 1.0F, rng);
  }
  return in;
}

// The gradient a backward receives: for a loss layer (per-sample output) the
// 1/b of a mean over the micro-batch, else small random values.
Tensor output_gradient(const Tensor& output, const models::Layer& layer, int b,
                       std::mt19937_64& rng) {
  if (layer.output_elems == 1 && output.shape().size() == 1) {
    Tensor g(output.shape());
    std::fill(g.f32().begin(), g.f32().end(), 1.0F / static_cast<float>(b));
    return g;
  }
  return random_normal(output.shape(), 0.01F, rng);
}

profiles::ProfileSample profile_sample(cpu::Layer& layer, const models::Model& model, int b,
                                       const ProfilerOptions& options, std::mt19937_64& rng) {
  const models::Layer& spec = layer.spec();
  const LayerInputs in = random_inputs(model, spec, b, rng);
  const Tensor* target = in.target.empty() ? nullptr : &in.target;
  profiles::ProfileSample sample;
  sample.micro_batch_size = b;
  sample.input_bytes = in.input.bytes();
  std::vector<double> fwd;
  std::vector<double> bwd;
  Tensor grad_output;
  for (int run = 0; run < options.warmup + options.repeats; ++run) {
    MemoryAccount account;
    cpu::Stash stash;
    Tensor input = in.input.clone();
    const auto t0 = Clock::now();
    Tensor output = layer.forward(std::move(input), target, stash, &account);
    const auto t1 = Clock::now();
    if (run == 0) {
      sample.output_bytes = output.bytes();
      sample.activation_bytes = account.bytes();
      grad_output = output_gradient(output, spec, b, rng);
    } else if (account.bytes() != sample.activation_bytes) {
      throw RunError(fmt::format("layer {}: the stash held {} bytes, then {} bytes at b={}",
                                 spec.name, sample.activation_bytes, account.bytes(), b));
    }
    const auto t2 = Clock::now();
    const Tensor grad_input = layer.backward(std::move(stash), grad_output);
    const auto t3 = Clock::now();
    if (run >= options.warmup) {
      fwd.push_back(elapsed_us(t0, t1));
      bwd.push_back(elapsed_us(t2, t3));
    }
  }
  sample.fwd_us = median(fwd);
  sample.bwd_us = median(bwd);
  return sample;
}

// The median of the layer's optimizer steps; 0 for a layer without parameters,
// whose step does nothing.
double optimizer_step_us(cpu::Layer& layer, const ProfilerOptions& options) {
  if (layer.parameters().empty()) return 0.0;
  OptimizerState state(options.optimizer, layer.parameters());
  std::vector<double> times;
  for (int run = 0; run < options.warmup + options.repeats; ++run) {
    const auto t0 = Clock::now();
    state.step(layer.parameters());
    const auto t1 = Clock::now();
    if (run >= options.warmup) times.push_back(elapsed_us(t0, t1));
  }
  return median(times);
}

std::vector<int> checked_sizes(std::span<const int> sizes) {
  if (sizes.empty()) throw InputError("--micro-batch-sizes: no size given");
  std::vector<int> sorted(sizes.begin(), sizes.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 1) {
    throw InputError(fmt::format("--micro-batch-sizes: sizes must be at least 1, got {}", sorted.front()));
  }
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    throw InputError(fmt::format("--micro-batch-sizes: {} is given more than once", *dup));
  }
  return sorted;
}

}  // namespace

double measure_handoff_latency_us(int round_trips) {
  if (round_trips < 1) throw InputError("link round trips must be at least 1");
  // Rank 0 sends an activation to rank 1 through the executor's own
  // transport, rank 1 answers with a gradient; half a round trip is one
  // hand-off: a send, the receiver's wake-up and its receive.
  InProcessTransport transport(2);
  const schedules::Rank first{0};
  const schedules::Rank second{1};
  const int warmup = std::max(10, round_trips / 10);
  const int total = warmup + round_trips;
  const auto tag = [](int i, MessageKind kind) {
    return MessageTag{.step = i, .kind = kind, .stage = schedules::Stage{0}, .microbatch = schedules::Microbatch{0}};
  };
  std::jthread echo([&] {
    for (int i = 0; i < total; ++i) {
      Tensor t = transport.receive(second, first, tag(i, MessageKind::activation));
      transport.send(second, first, tag(i, MessageKind::gradient), std::move(t));
    }
  });
  std::vector<double> one_way;
  one_way.reserve(static_cast<std::size_t>(round_trips));
  for (int i = 0; i < total; ++i) {
    Tensor message({1});  // the size is irrelevant: the tensor moves, its bytes do not
    const auto t0 = Clock::now();
    transport.send(first, second, tag(i, MessageKind::activation), std::move(message));
    const Tensor back = transport.receive(first, second, tag(i, MessageKind::gradient));
    const auto t1 = Clock::now();
    if (i >= warmup) one_way.push_back(elapsed_us(t0, t1) / 2);
  }
  return median(std::move(one_way));
}

profiles::Profile profile_cpu(const models::Model& model, std::span<const int> micro_batch_sizes,
                              const ProfilerOptions& options) {
  const std::vector<int> sizes = checked_sizes(micro_batch_sizes);
  if (options.warmup < 0) throw InputError(fmt::format("--warmup must be 0 or more, got {}", options.warmup));
  if (options.repeats < 1) throw InputError(fmt::format("--repeats must be at least 1, got {}", options.repeats));
  profiles::Profile profile;
  profile.device = cpu_device_name();
  profile.source = "cpu";
  profile.dtype = "fp32";
  profile.model = model.spec;
  profile.link = {.latency_us = measure_handoff_latency_us(options.link_round_trips),
                  .bandwidth_GBps = kInProcessBandwidthGBps};
  // One generator for every random input, seeded apart from the weights.
  std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  const int count = static_cast<int>(model.layers.size());
  for (int index = 0; index < count; ++index) {
    const std::unique_ptr<cpu::Layer> layer = cpu::make_layer(model, index, options.seed);
    profiles::LayerProfile lp;
    lp.name = layer->spec().name;
    lp.kind = layer->spec().kind;
    for (const cpu::Parameter& p : layer->parameters()) lp.param_bytes += p.value.bytes();
    for (const int b : sizes) lp.samples.push_back(profile_sample(*layer, model, b, options, rng));
    lp.optimizer_us = optimizer_step_us(*layer, options);
    if (options.on_layer) options.on_layer(index, count, lp);
    profile.layers.push_back(std::move(lp));
  }
  return profile;
}

}  // namespace gpipe::exec
