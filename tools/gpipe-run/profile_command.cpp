// gpipe-run profile --backend cpu|cuda --model SPEC --micro-batch-sizes LIST --out P.json:
// measure every layer on this CPU (exec/cpu/profiler.hpp) or on the GPU with
// CUPTI, in the SM partition a --stages K run gives each stage
// (exec/cuda/profiler/layer_profiler.hpp), and write the profile that
// `gpipe-sim run --profile` reads; on stderr the passes' progress (a bar on a
// terminal, an estimate when long) and a line per layer, a one-line summary
// on stdout.
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/cpu/logged_context_parallel.hpp"
#include "exec/cpu/logged_tensor_parallel.hpp"
#include "exec/cpu/tensor_parallel_comm.hpp"
#include "exec/mpi/link_probe.hpp"
#include "exec/profiling/profiler_options.hpp"
#include "exec/runtime/run_settings.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"
#include "models/optimizer.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/link_fit.hpp"
#include "profiles/stage_costs.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/progress.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/commands.hpp"
#include "tools/gpipe-run/profile_flags.hpp"
#include "tools/gpipe-run/run_flags.hpp"

namespace gpipe::tools {
namespace {

constexpr const char* kPassUnits = "passes over every micro-batch size";

}  // namespace

void report_profiler_pass(int pass, int passes) {
  // A bar that redraws itself, only on a terminal: logs keep the layer lines alone.
  if (!stderr_is_terminal()) return;
  std::cerr << "\r" << progress_bar(pass + 1, passes, kPassUnits) << (pass + 1 == passes ? "\n" : "") << std::flush;
}

void report_profiled_layer(int index, int count, const profiles::LayerProfile& layer) {
  std::string samples;
  for (const auto& s : layer.samples) {
    samples += fmt::format("  b={} fwd {} bwd {}", s.micro_batch_size, format_time_us(s.fwd_us),
                           format_time_us(s.bwd_us));
    if (s.bwd_input_us && s.bwd_weight_us) {
      samples += fmt::format(" (I {} + W {})", format_time_us(*s.bwd_input_us), format_time_us(*s.bwd_weight_us));
    }
  }
  std::cerr << fmt::format("layer {}/{} {} ({}):{}  step {}\n", index + 1, count, layer.name, layer.kind,
                           samples, format_time_us(layer.optimizer_us));
}

namespace {

// The profile's link: the ping-pong's, or, when the model's pipeline ran,
// the latency and bandwidth its messages show (profiles::fit_pipeline_link).
// A message's bytes are the first stage's output at that micro-batch size,
// as the simulator prices it.
profiles::Link pipeline_link_of(const exec::mpi::ProbedLink& probed, const profiles::Profile& profile) {
  if (probed.pipeline.empty()) return probed.link;
  std::vector<profiles::LinkPoint> points;
  for (const exec::mpi::PipelineTransfer& t : probed.pipeline) {
    const auto stages = profiles::stage_costs(profile, probed.pipeline_partition, t.micro_batch_size);
    points.push_back({stages.front().output_bytes, t.median_us});
  }
  std::vector<int> sizes;
  for (const auto& t : probed.pipeline) sizes.push_back(t.micro_batch_size);
  try {
    profiles::Link link = profiles::fit_pipeline_link(
        probed.link, std::move(points),
        fmt::format("the median message of a K=2 gpipe pipeline of the model at micro-batch sizes {} ({} runs), "
                    "measured as gpipe-sim diff measures transfers",
                    fmt::join(sizes, ","), exec::mpi::kPipelineRuns));
    // Only the bandwidth came from the pipeline: say where the latency did.
    if (link.latency_us == probed.link.latency_us) {
      link.measured_with = fmt::format("latency: {}; bandwidth: {}", probed.link.measured_with, link.measured_with);
    }
    return link;
  } catch (const InputError& e) {
    // Messages too small to time apart from the latency: the ping-pong's line stands.
    std::cerr << "note: the ping-pong's bandwidth is kept: " << e.what() << "\n";
    return probed.link;
  }
}

// With the all-reduce's fit as its collective parameters.
profiles::Link link_of(const exec::mpi::ProbedLink& probed, const profiles::Profile& profile) {
  profiles::Link link = pipeline_link_of(probed, profile);
  link.collective = probed.collective;
  link.reduce_scatter = probed.reduce_scatter;
  link.all_gather = probed.all_gather;
  return link;
}

// The profiler's passes, each over every layer at every size: a bar on a
// terminal, and "about 2 h 5 min for 100002 passes ..." when long.
std::function<void(int pass, int passes)> pass_progress() {
  auto progress = std::make_shared<std::optional<Progress>>();
  return [progress, start = Progress::Clock::now()](int pass, int passes) {
    if (!*progress) {
      progress->emplace(passes, kPassUnits, std::cerr, Progress::Options{.bar = stderr_is_terminal()}, start);
    }
    (*progress)->update(pass + 1);
  };
}

std::string size_list(const profiles::Profile& profile) {
  return fmt::format("{}", fmt::join(profile.layers.front().micro_batch_sizes(), ","));
}

int run_profile(const ProfileFlags& f) {
  f.cuda.check_backend(f.backend);
  f.cpu.check_backend(f.backend);
  // With context parallelism, the model as one member's layers compute it.
  const models::Model whole = models::parse_model(f.model);
  const models::Model model = models::split_context_parallel(whole, {.degree = f.context_parallel});
  const std::vector<int> sizes = parse_int_list(f.micro_batch_sizes, "--micro-batch-sizes");
  if (sizes.size() > kMaxProfiledSizes) {
    throw InputError(fmt::format("--micro-batch-sizes: {} sizes, more than the {} a profile measures; "
                                 "interpolation fills the sizes between",
                                 sizes.size(), kMaxProfiledSizes));
  }
  const exec::LaunchInfo launch = exec::parse_launch_environment(exec::current_environment(), false);
  // Rank 0 alone writes it (two processes probing one path could leave an empty file).
  if (launch.rank == 0) check_writable(f.out, "--out");
  require_backend(f.backend);  // exit 1: "no CUDA device: ..." or no CUDA backend in this build
  exec::ProfilerOptions options;
  options.warmup = f.warmup;
  options.repeats = f.repeats;
  options.seed = f.seed;
  options.optimizer.kind = *models::parse_optimizer(f.optimizer);
  if (f.workload == "inference") {
    if (f.backend != "cpu") throw InputError("--workload inference profiles on the CPU so far");
    options.forward_only = true;
  }
  // Under a launcher the other processes of the launch wait in MPI, polling a
  // core each, while rank 0 measures: peer threads would share a core with
  // them and read as a slowdown of 100 %. So no contention is measured there.
  if (launch.world_size > 1) options.contention_peers = 0;
  // As a rank of a K-stage run computes (under a launcher: as one of this node's processes).
  if (f.backend == "cpu") {
    options.threads_per_rank = threads_per_rank(f.backend, f.cpu, f.stages, launch);
  }
  options.on_pass = pass_progress();
  options.on_layer = report_profiled_layer;
  // Under mpirun or srun: first the link between two processes, which every
  // process joins (a ping-pong, then the model's own pipeline); then rank 0
  // alone measures the layers and writes the profile.
  std::optional<exec::mpi::ProbedLink> probed;
  const int parts = f.tensor_parallel * f.context_parallel;  // one rank's processes
  if (parts > 1 && (f.backend != "cpu" || launch.world_size != parts)) {
    const std::string groups =
        f.tensor_parallel > 1 && f.context_parallel > 1
            ? fmt::format("--tensor-parallel {} --context-parallel {} profiles one rank's {} parts of {} members",
                          f.tensor_parallel, f.context_parallel, f.tensor_parallel, f.context_parallel)
        : f.tensor_parallel > 1 ? fmt::format("--tensor-parallel {} profiles one rank's {} parts", f.tensor_parallel,
                                              f.tensor_parallel)
                                : fmt::format("--context-parallel {} profiles one rank's {} members",
                                              f.context_parallel, f.context_parallel);
    throw InputError(fmt::format("{}, one process each: start it with --backend cpu under mpirun -np {} (or srun -n {})",
                                 groups, parts, parts));
  }
  if (f.context_parallel > 1) {
    exec::TrainOptions family;  // the executor's check of the layers it splits, its one-line error first
    family.model = model;
    family.schedule.data_parallel = f.context_parallel;  // the gradient group, D x C
    exec::check_context_parallel(family, f.backend);
  }
  // With tensor (context) parallelism the T (C, or T x C) processes measure
  // the layers together, each its part (its tokens), while MPI runs; rank 0
  // writes the profile.
  std::optional<profiles::Profile> measured;
  std::optional<profiles::CollectiveLink> tensor_all_reduce, context_all_gather, context_reduce_scatter;
  if (f.backend == "cpu" && launch.world_size > 1) {
    exec::mpi::LinkProbeOptions probe;
    if (f.tensor_parallel > 1) {
      (void)models::split_tensor_then_context(model, f.tensor_parallel);  // its one-line error first
      probe.tensor_parallel = f.tensor_parallel;
    }
    probe.context_parallel = f.context_parallel;
    if (f.tensor_parallel > 1 || f.context_parallel > 1) {
      probe.in_world = [&](exec::cpu::TensorParallelComm* group, exec::cpu::ContextParallelComm* members) {
        exec::ProfilerOptions part = options;
        // The groups' collectives timed as the blocks run them, for the profile's fits.
        std::optional<exec::cpu::LoggedTensorParallel> logged_parts;
        if (group != nullptr) logged_parts.emplace(*group);
        part.tensor_parallel = logged_parts ? &*logged_parts : nullptr;
        std::optional<exec::cpu::LoggedContextParallel> logged;
        if (members != nullptr) logged.emplace(*members);
        part.context_parallel = logged ? &*logged : nullptr;
        const bool first = (group == nullptr || group->rank() == 0) && (members == nullptr || members->rank() == 0);
        if (!first) part.on_pass = nullptr, part.on_layer = nullptr;
        measured = measure_profile(f.backend, f.cuda, f.stages, model, sizes, part);
        if (logged_parts) tensor_all_reduce = logged_parts->fit();
        if (logged) {
          context_all_gather = logged->fit(models::Collective::all_gather);
          context_reduce_scatter = logged->fit(models::Collective::reduce_scatter);
        }
      };
    }
    probe.on_point = [](const profiles::LinkPoint& p) {
      std::cerr << fmt::format("link {:>9} one way {}\n", format_bytes(p.bytes), format_time_us(p.one_way_us));
    };
    if (f.link_fit == "pipeline" && model.layers.size() >= 2 && launch.world_size == 2) {
      // The whole model's pipeline: two processes, whatever the context split.
      probe.pipeline = exec::mpi::PipelineProbe{.model = whole,
                                                .micro_batch_sizes = sizes,
                                                .threads_per_rank = options.threads_per_rank,
                                                .seed = f.seed,
                                                .optimizer = options.optimizer};
      probe.on_pipeline = [](int size, double median_us) {
        std::cerr << fmt::format("link in a K=2 pipeline, b={}: median message {}\n", size, format_time_us(median_us));
      };
    }
    probed = exec::mpi::probe_mpi_link(probe);
    if (probed->rank != 0) return 0;
  }
  profiles::Profile profile =
      measured ? std::move(*measured) : measure_profile(f.backend, f.cuda, f.stages, model, sizes, options);
  if (probed) profile.link = link_of(*probed, profile);
  profile.link.tensor_all_reduce = tensor_all_reduce;
  profile.link.context_all_gather = context_all_gather;
  profile.link.context_reduce_scatter = context_reduce_scatter;
  profiles::write_profile(profile, f.out);
  const std::vector<profiles::LinkPoint>& fitted =
      profile.link.pipeline_points.empty() ? profile.link.points : profile.link.pipeline_points;
  const std::string link =
      probed ? fmt::format("link {:.2f} us + bytes at {:.2f} GB/s, fitted to {} ({} sizes {}-{}, the model within "
                           "{:.0f} % of each)",
                           profile.link.latency_us, profile.link.bandwidth_GBps, profile.link.measured_with,
                           fitted.size(), format_bytes(fitted.front().bytes), format_bytes(fitted.back().bytes),
                           100 * profiles::link_fit_max_relative_error(profile.link))
      : f.backend == "cuda"
          ? fmt::format("link {:.2f} us at {:.1f} GB/s (device-to-device copy between SM partitions)",
                        profile.link.latency_us, profile.link.bandwidth_GBps)
          : fmt::format("link {:.2f} us (in-process hand-off) at {:g} GB/s (a pointer moves, not the bytes; "
                        "under mpirun -np 2 the link between processes is measured)",
                        profile.link.latency_us, profile.link.bandwidth_GBps);
  std::cout << fmt::format("{}: {} profile of {} on {} ({}), {} layers, micro-batch sizes {}; {}\n", f.out,
                           profile.source, profile.model, profile.device, profile.dtype,
                           profile.layers.size(), size_list(profile), link);
  if (probed && probed->collective) {
    std::cout << fmt::format("collectives {:.2f} us a step + bytes at {:.2f} GB/s a rank, fitted to {}\n",
                             probed->collective->latency_us, probed->collective->bandwidth_GBps,
                             probed->collective_measured_with);
    if (probed->reduce_scatter && probed->all_gather) {
      std::cout << fmt::format("            reduce-scatter {:.2f} us a step + {:.2f} GB/s, all-gather {:.2f} us a "
                               "step + {:.2f} GB/s\n",
                               probed->reduce_scatter->latency_us, probed->reduce_scatter->bandwidth_GBps,
                               probed->all_gather->latency_us, probed->all_gather->bandwidth_GBps);
    }
  }
  if (tensor_all_reduce) {
    std::cout << fmt::format("tensor collectives as the blocks ran them: all-reduce {:.2f} us a step + {:.2f} GB/s "
                             "(each call timed, the median of each size)\n",
                             tensor_all_reduce->latency_us, tensor_all_reduce->bandwidth_GBps);
  }
  if (context_all_gather && context_reduce_scatter) {
    std::cout << fmt::format("context collectives as the blocks ran them: all-gather {:.2f} us a step + {:.2f} GB/s, "
                             "reduce-scatter {:.2f} us a step + {:.2f} GB/s (each call timed, the median of each size)\n",
                             context_all_gather->latency_us, context_all_gather->bandwidth_GBps,
                             context_reduce_scatter->latency_us, context_reduce_scatter->bandwidth_GBps);
  }
  return 0;
}

}  // namespace

Subcommand add_profile_run_command(CLI::App& app) {
  auto f = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Measure every layer of a model (median forward, backward and optimizer-step "
                 "times; input, output and stash bytes) and write a profile for gpipe-sim");
  f->add_to(*cmd);
  return {cmd, [f] { return run_profile(*f); }};
}

}  // namespace gpipe::tools
