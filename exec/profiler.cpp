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

// The layers of the model, as the executor builds them, with their optimizer
// state, and every optimizer step timed.
struct ProfiledModel {
  std::vector<std::unique_ptr<cpu::Layer>> layers;
  std::vector<OptimizerState> optimizers;
  std::vector<std::vector<double>> step_us;  // per layer
};

// One micro-batch size: its data (the first layer's input, every loss layer's
// target), what was measured at it, and every timed forward and backward.
struct SizeRuns {
  int b = 0;
  Tensor input;
  std::vector<Tensor> targets;  // per layer; empty but for a loss layer
  std::vector<profiles::ProfileSample> samples;
  std::vector<std::vector<double>> fwd_us, bwd_us;  // per layer
};

SizeRuns size_runs(const ProfiledModel& pm, const models::Model& model, int b, std::mt19937_64& rng) {
  const std::size_t n = pm.layers.size();
  SizeRuns s;
  s.b = b;
  s.input = random_inputs(model, pm.layers.front()->spec(), b, rng).input;
  s.targets.resize(n);
  for (std::size_t i = 0; i < n; ++i) s.targets[i] = random_inputs(model, pm.layers[i]->spec(), b, rng).target;
  s.samples.resize(n);
  s.fwd_us.resize(n);
  s.bwd_us.resize(n);
  return s;
}

// One pass of the whole model at one size, as a single-stage run executes a
// micro-batch: each layer's forward in model order, each backward in reverse,
// then each layer's optimizer step. A layer timed inside the pass finds the
// caches as the run leaves them (the other layers' weights and stashes passed
// through since its last call); timed alone and repeated, a layer keeps its
// weights in cache and runs faster than it ever does in training.
void run_pass(ProfiledModel& pm, SizeRuns& s, bool first, bool timed, std::mt19937_64& rng) {
  const std::size_t n = pm.layers.size();
  std::vector<MemoryAccount> accounts(n);  // one per layer: its stash alone
  std::vector<cpu::Stash> stashes(n);
  Tensor x = s.input.clone();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t in_bytes = x.bytes();
    const Tensor* target = s.targets[i].empty() ? nullptr : &s.targets[i];
    const auto t0 = Clock::now();
    Tensor out = pm.layers[i]->forward(std::move(x), target, stashes[i], &accounts[i]);
    const auto t1 = Clock::now();
    if (timed) s.fwd_us[i].push_back(elapsed_us(t0, t1));
    profiles::ProfileSample& sample = s.samples[i];
    if (first) {
      sample.micro_batch_size = s.b;
      sample.input_bytes = in_bytes;
      sample.output_bytes = out.bytes();
      sample.activation_bytes = accounts[i].bytes();
    } else if (accounts[i].bytes() != sample.activation_bytes) {
      throw RunError(fmt::format("layer {}: the stash held {} bytes, then {} bytes at b={}",
                                 pm.layers[i]->spec().name, sample.activation_bytes, accounts[i].bytes(),
                                 s.b));
    }
    x = std::move(out);
  }
  Tensor grad = output_gradient(x, pm.layers.back()->spec(), s.b, rng);
  for (std::size_t i = n; i-- > 0;) {
    const auto t0 = Clock::now();
    Tensor grad_input = pm.layers[i]->backward(std::move(stashes[i]), grad);
    const auto t1 = Clock::now();
    if (timed) s.bwd_us[i].push_back(elapsed_us(t0, t1));
    grad = std::move(grad_input);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (pm.layers[i]->parameters().empty()) continue;  // nothing to step: optimizer_us stays 0
    const auto t0 = Clock::now();
    pm.optimizers[i].step(pm.layers[i]->parameters());
    const auto t1 = Clock::now();
    if (timed) pm.step_us[i].push_back(elapsed_us(t0, t1));
  }
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
    return MessageTag{.step = i, .kind = kind, .stage = schedules::Stage{0},
                      .microbatch = schedules::Microbatch{0}};
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
  ProfiledModel pm;
  for (int index = 0; index < count; ++index) {
    pm.layers.push_back(cpu::make_layer(model, index, options.seed));
    pm.optimizers.emplace_back(options.optimizer, pm.layers.back()->parameters());
  }
  pm.step_us.resize(static_cast<std::size_t>(count));
  std::vector<SizeRuns> runs;
  for (const int b : sizes) runs.push_back(size_runs(pm, model, b, rng));
  // Passes go round the sizes (b1, b2, ..., b1, b2, ...), not size after
  // size: a stretch of load from elsewhere on the machine then slows every
  // size a little instead of one size a lot, and the medians shrug it off.
  const int passes = options.warmup + options.repeats;
  for (int pass = 0; pass < passes; ++pass) {
    for (SizeRuns& s : runs) run_pass(pm, s, /*first=*/pass == 0, /*timed=*/pass >= options.warmup, rng);
    if (options.on_pass) options.on_pass(pass, passes);
  }
  for (SizeRuns& s : runs) {
    for (std::size_t i = 0; i < s.samples.size(); ++i) {
      s.samples[i].fwd_us = median(s.fwd_us[i]);
      s.samples[i].bwd_us = median(s.bwd_us[i]);
    }
  }
  for (int index = 0; index < count; ++index) {
    const auto i = static_cast<std::size_t>(index);
    profiles::LayerProfile lp;
    lp.name = pm.layers[i]->spec().name;
    lp.kind = pm.layers[i]->spec().kind;
    for (const cpu::Parameter& p : pm.layers[i]->parameters()) lp.param_bytes += p.value.bytes();
    for (const SizeRuns& s : runs) lp.samples.push_back(s.samples[i]);
    lp.optimizer_us = pm.step_us[i].empty() ? 0.0 : median(pm.step_us[i]);
    if (options.on_layer) options.on_layer(index, count, lp);
    profile.layers.push_back(std::move(lp));
  }
  return profile;
}

}  // namespace gpipe::exec
