#include "exec/cpu/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/device_name.hpp"
#include "exec/cpu/in_process_link.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/optimizer.hpp"
#include "exec/profiling/profile_assembly.hpp"
#include "exec/profiling/profiler_inputs.hpp"
#include "exec/runtime/run_settings.hpp"

namespace gpipe::exec::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// The layers of the model, as the executor builds them, with their optimizer
// state, and every optimizer step timed.
struct ProfiledModel {
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<OptimizerState> optimizers;
  std::vector<std::vector<double>> step_us;  // per layer
};

// One micro-batch size: its data (the first layer's input, every loss layer's
// target), what was measured at it, and every timed forward and backward.
struct SizeRuns {
  SizeInputs data;
  std::vector<profiles::ProfileSample> samples;
  std::vector<std::vector<double>> fwd_us, bwd_input_us, bwd_weight_us;  // per layer
};

SizeRuns size_runs(const models::Model& model, int b, const ProfilerOptions& options) {
  const std::size_t n = model.layers.size();
  SizeRuns s;
  s.data = training_size_inputs(model, b, options.seed,
                                options.context_parallel != nullptr ? options.context_parallel->rank() : 0);
  s.samples.resize(n);
  s.fwd_us.resize(n);
  s.bwd_input_us.resize(n);
  s.bwd_weight_us.resize(n);
  return s;
}

// One pass of the whole model at one size, as a single-stage run executes a
// micro-batch: each layer's forward in model order, each backward in reverse
// (its I, then its W), then each layer's optimizer step. A layer timed inside the pass finds the
// caches as the run leaves them (the other layers' weights and stashes passed
// through since its last call); timed alone and repeated, a layer keeps its
// weights in cache and runs faster than it ever does in training.
void run_pass(ProfiledModel& pm, SizeRuns& s, bool first, bool timed, bool forward_only, std::mt19937_64& rng) {
  const std::size_t n = pm.layers.size();
  std::vector<MemoryAccount> accounts(n);  // one per layer: its stash alone
  std::vector<Stash> stashes(n);
  const int b = s.data.micro_batch_size;
  Tensor x = s.data.input.clone();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t in_bytes = x.bytes();
    const Tensor* target = s.data.targets[i].empty() ? nullptr : &s.data.targets[i];
    // A stream's forward charges no memory account; a forward-only pass
    // charges one only when it records the bytes (the first).
    MemoryAccount* account = forward_only && !first ? nullptr : &accounts[i];
    // A training pass draws dropout's masks as training does; a stream's drops nothing.
    pm.layers[i]->set_samples({.step = 0, .first = 0, .training = !forward_only});
    const auto t0 = Clock::now();
    Tensor out = pm.layers[i]->forward(std::move(x), target, stashes[i], account);
    const auto t1 = Clock::now();
    if (timed) s.fwd_us[i].push_back(elapsed_us(t0, t1));
    if (account != nullptr) {
      record_sample_bytes(s.samples[i], first, pm.layers[i]->spec(), b, in_bytes, out.bytes(), account->bytes());
    }
    // A stream drops each layer's stash at once, and the next layer's
    // tensors reuse that memory while it is in cache; kept to the end of the
    // pass, they would take colder memory, and small forwards ran 3 to 10 %
    // slower here than in the stream they price.
    if (forward_only) stashes[i] = Stash();
    x = std::move(out);
  }
  if (forward_only) return;  // the stashes go unused, as in a serving run
  Tensor grad = output_gradient(x.shape(), pm.layers.back()->spec(), b, rng);
  for (std::size_t i = n; i-- > 0;) {
    Stash weight_stash;
    const auto t0 = Clock::now();
    Tensor grad_input = pm.layers[i]->backward_input(std::move(stashes[i]), grad, weight_stash, &accounts[i]);
    const auto t1 = Clock::now();
    record_weight_stash_bytes(s.samples[i], first, pm.layers[i]->spec(), b, accounts[i].bytes());
    pm.layers[i]->backward_weight(std::move(weight_stash));
    const auto t2 = Clock::now();
    if (timed) {
      s.bwd_input_us[i].push_back(elapsed_us(t0, t1));
      s.bwd_weight_us[i].push_back(elapsed_us(t1, t2));
    }
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

ProfiledModel profiled_model(const models::Model& model, const ProfilerOptions& options) {
  ProfiledModel pm;
  for (int index = 0; index < static_cast<int>(model.layers.size()); ++index) {
    if (options.tensor_parallel != nullptr) {
      pm.layers.push_back(make_layer_part(model, index, options.seed, *options.tensor_parallel, options.context_parallel));
    } else if (options.context_parallel != nullptr) {
      pm.layers.push_back(make_context_layer(model, index, options.seed, *options.context_parallel));
    } else {
      pm.layers.push_back(make_layer(model, index, options.seed));
    }
    pm.optimizers.emplace_back(options.optimizer, pm.layers.back()->parameters());
  }
  pm.step_us.resize(model.layers.size());
  return pm;
}

// Ranks computing beside each other share the cores' memory bandwidth and the
// last-level cache. At the largest size, whole passes timed alone and timed
// while `peers` other threads run the same passes on replicas of the model
// (as the other ranks of a pipeline compute theirs), in turn, alone then
// loaded, so that the machine's own noise falls on both alike: the slowdown
// is the ratio of the medians, less one (0 if noise made it negative).
profiles::ContentionPoint measure_contention(ProfiledModel& pm, const models::Model& model, int b, int peers,
                                             const ProfilerOptions& options, std::mt19937_64& rng) {
  SizeRuns mine = size_runs(model, b, options);
  std::atomic<bool> stop{false};
  std::atomic<int> loaded{0};    // 1 while the peers should compute (a futex word)
  std::atomic<int> started{0};   // passes the peers began since the last change
  std::atomic<int> resting{0};   // peers that have seen the pause and wait
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(peers));
  std::vector<double> alone, beside;
  {
    std::vector<std::jthread> others;
    for (int i = 0; i < peers; ++i) {
      others.emplace_back([&, i] {
        // A peer that fails (out of memory) says so to the main thread, which
        // rethrows it, and keeps answering as if it ran, so that nothing hangs.
        std::optional<ProfiledModel> replica;
        std::optional<SizeRuns> runs;
        std::mt19937_64 own(options.seed + 1 + static_cast<std::uint64_t>(i));
        bool first = true;  // its first pass records the sizes the later ones are checked against
        try {
          replica.emplace(profiled_model(model, options));
          runs.emplace(size_runs(model, b, options));
        } catch (...) {
          failed[static_cast<std::size_t>(i)] = std::current_exception();
        }
        for (;;) {
          ++resting;
          resting.notify_all();
          loaded.wait(0);
          --resting;
          if (stop) return;
          while (loaded.load() == 1 && !stop) {
            ++started;
            started.notify_all();
            if (failed[static_cast<std::size_t>(i)]) continue;
            try {
              run_pass(*replica, *runs, first, /*timed=*/false, options.forward_only, own);
              first = false;
            } catch (...) {
              failed[static_cast<std::size_t>(i)] = std::current_exception();
            }
          }
          if (stop) return;
        }
      });
    }
    // Destroyed before `others` joins them, at the end of this block or when
    // the main thread throws: the peers stop.
    struct StopPeers {
      std::atomic<bool>& stop;
      std::atomic<int>& loaded;
      ~StopPeers() {
        stop = true;
        loaded = 1;
        loaded.notify_all();
      }
    } const stop_peers{stop, loaded};
    const auto pause = [&] {
      loaded = 0;
      for (int r = resting.load(); r < peers; r = resting.load()) resting.wait(r);
    };
    bool first = true;
    const auto time_pass = [&] {
      const auto t0 = Clock::now();
      run_pass(pm, mine, first, /*timed=*/false, options.forward_only, rng);
      first = false;
      return elapsed_us(t0, Clock::now());
    };
    const int passes = 1 + options.repeats;  // the first of each kind warms up
    for (int pass = 0; pass < passes; ++pass) {
      pause();
      const double a = time_pass();
      started = 0;
      loaded = 1;
      loaded.notify_all();
      for (int s = started.load(); s < peers; s = started.load()) started.wait(s);
      const double l = time_pass();
      if (pass > 0) {
        alone.push_back(a);
        beside.push_back(l);
      }
    }
  }
  for (const std::exception_ptr& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  return {.busy_peers = peers, .slowdown = std::max(0.0, median(std::move(beside)) / median(std::move(alone)) - 1)};
}

}  // namespace

double measure_handoff_latency_us(int round_trips) {
  if (round_trips < 1) throw InputError("link round trips must be at least 1");
  // Rank 0 sends an activation to rank 1 through the executor's own
  // link, rank 1 answers with a gradient; half a round trip is one
  // hand-off: a send, the receiver's wake-up and its receive.
  // Polling as a 2-rank run's receivers do on this machine.
  InProcessLink link(2, nullptr, polling_budget(2));
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
      Tensor t = link.receive(second, first, tag(i, MessageKind::activation), {});
      link.send(second, first, tag(i, MessageKind::gradient), std::move(t), {});
    }
  });
  std::vector<double> one_way;
  one_way.reserve(static_cast<std::size_t>(round_trips));
  for (int i = 0; i < total; ++i) {
    Tensor message({1});  // the size is irrelevant: the tensor moves, its bytes do not
    const auto t0 = Clock::now();
    link.send(first, second, tag(i, MessageKind::activation), std::move(message), {});
    const Tensor back = link.receive(first, second, tag(i, MessageKind::gradient), {});
    const auto t1 = Clock::now();
    if (i >= warmup) one_way.push_back(elapsed_us(t0, t1) / 2);
  }
  return median(std::move(one_way));
}

profiles::Profile profile_cpu(const models::Model& model, std::span<const int> micro_batch_sizes,
                              const ProfilerOptions& options) {
  const std::vector<int> sizes = checked_micro_batch_sizes(micro_batch_sizes);
  check_pass_counts(options.warmup, options.repeats);
  check_threads_per_rank(options.threads_per_rank);
  if (model.attention_cache && !options.forward_only) {
    throw InputError("dit's cache=1 serves inference streams, which have no backward: profile it with --workload "
                     "inference");
  }
  // Measured as a rank of that many threads computes: on a team of them.
  std::unique_ptr<ComputeTeam> team;
  if (options.threads_per_rank > 1) {
    team = std::make_unique<ComputeTeam>(options.threads_per_rank, polling_budget(options.threads_per_rank));
  }
  const ComputeTeam::Scope on_team(team.get());
  profiles::Profile profile = profile_header(model, device_name(options.threads_per_rank), "cpu");
  if (options.forward_only) profile.workload = "inference";
  if (options.tensor_parallel != nullptr) profile.tensor_parallel = options.tensor_parallel->size();
  if (options.context_parallel != nullptr) profile.context_parallel = options.context_parallel->size();
  profile.link = {.latency_us = measure_handoff_latency_us(options.link_round_trips),
                  .bandwidth_GBps = kInProcessBandwidthGBps};
  // One generator for the output gradients; the data is the run's own
  // (training_size_inputs).
  std::mt19937_64 rng = output_gradient_generator(options.seed);
  const int count = static_cast<int>(model.layers.size());
  ProfiledModel pm = profiled_model(model, options);
  std::vector<SizeRuns> runs;
  for (const int b : sizes) runs.push_back(size_runs(model, b, options));
  // Passes go round the sizes (b1, b2, ..., b1, b2, ...), not size after
  // size: a stretch of load from elsewhere on the machine then slows every
  // size a little instead of one size a lot, and the medians shrug it off.
  // A stream serves one size, so each of its forwards finds the caches as a
  // forward of that size left them. Timed right after another size's pass, a
  // small forward found them holding the larger one's tensors and ran 3 to 4 %
  // slower here than in the stream; so an inference profile runs an untimed
  // pass of the size first. (A training pass, forwards, backwards and steps,
  // sweeps through far more than the caches hold, and leaves them alike.)
  const bool rewarm = options.forward_only && runs.size() > 1;
  const int passes = options.warmup + options.repeats;
  for (int pass = 0; pass < passes; ++pass) {
    for (SizeRuns& s : runs) {
      const bool timed = pass >= options.warmup;
      if (timed && rewarm) run_pass(pm, s, /*first=*/false, /*timed=*/false, options.forward_only, rng);
      run_pass(pm, s, /*first=*/pass == 0, timed, options.forward_only, rng);
    }
    if (options.on_pass) options.on_pass(pass, passes);
  }
  for (SizeRuns& s : runs) {
    for (std::size_t i = 0; i < s.samples.size(); ++i) {
      profiles::ProfileSample& sample = s.samples[i];
      // What the layer keeps for one stream of items of this size (dit's
      // cache=1): the bytes of the state it makes for one.
      if (options.forward_only) {
        const std::int64_t state = pm.layers[i]->start_sequences(1, sample.micro_batch_size, nullptr);
        if (state > 0) sample.state_bytes = state;
      }
      sample.fwd_us = median(s.fwd_us[i]);
      if (options.forward_only) continue;  // no backward was run: bwd_us 0, no split
      sample.bwd_input_us = median(s.bwd_input_us[i]);
      sample.bwd_weight_us = median(s.bwd_weight_us[i]);
      // The CPU's full backward is I then W in one call (exec/cpu/layers/kind_base.hpp).
      sample.bwd_us = *sample.bwd_input_us + *sample.bwd_weight_us;
    }
  }
  profile.layers = layer_profiles(pm.layers, runs);
  for (int index = 0; index < count; ++index) {
    const auto i = static_cast<std::size_t>(index);
    profiles::LayerProfile& lp = profile.layers[i];
    lp.optimizer_us = pm.step_us[i].empty() ? 0.0 : median(pm.step_us[i]);
    if (options.on_layer) options.on_layer(index, count, lp);
  }
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  // (A part of a tensor-parallel group cannot: its replicas' blocks would sum
  // over the group from several threads at once.)
  const int peers = options.threads_per_rank > 1 || options.tensor_parallel != nullptr ||
                            options.context_parallel != nullptr
                        ? 0
                    : options.contention_peers < 0 ? std::min(cores - 1, kMaxContentionPeers)
                                                   : std::min(options.contention_peers, cores - 1);
  // At 1, 2, 4, ... peers and at the most, between which the simulator interpolates.
  for (int n = 1; n <= peers; n = n * 2 > peers && n < peers ? peers : n * 2) {
    if (options.on_note) {
      options.on_note(fmt::format("contention: {} passes at b={} alone and beside {} other rank{}",
                                  2 * (1 + options.repeats), sizes.back(), n, n == 1 ? "" : "s"));
    }
    profile.contention.push_back(measure_contention(pm, model, sizes.back(), n, options, rng));
  }
  return profile;
}

}  // namespace gpipe::exec::cpu
