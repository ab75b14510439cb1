// What a run is, as every worker reads it: derived from TrainOptions and
// checked once, before any thread starts (errors name the flag), then
// constant for the whole run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "exec/runtime/fault.hpp"
#include "exec/runtime/train_options.hpp"
#include "exec/runtime/zero_shards.hpp"
#include "models/collective.hpp"
#include "models/model.hpp"
#include "schedules/schedule.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec {

struct RunSettings {
  const models::Model* model = nullptr;
  const schedules::Schedule* schedule = nullptr;  // lowered
  std::int64_t batch = 0;                         // N, a replica's share of the mini-batch
  int replicas = 1;                               // D: TrainOptions::replicas()
  int replica = 0;                                // which one this process computes
  int zero = 0;                                   // ZeRO's stage: 0 or 1
  int tensor_parallel = 1;                        // T: each rank's blocks in T parts
  int part = 0;                                   // which part this process holds
  int context_parallel = 1;                       // C: each sequence's tokens over C processes
  int context_rank = 0;                           // which of them this process is
  std::vector<int> microbatch_sizes;              // N split into M, as torch.tensor_split
  std::vector<std::int64_t> microbatch_offsets;   // first row of each micro-batch
  std::vector<std::vector<bool>> recomputed;      // [stage][m]: the schedule has R(s,m)
  int steps = 1;
  int measured_steps = 1;  // the last this many steps are measured
  std::uint64_t seed = 0;
  bool check_finite = false;
  std::optional<FaultInjection> fault;

  // The mini-batch of every replica together: D x N samples.
  [[nodiscard]] std::int64_t global_batch() const { return batch * replicas; }
  // What a process's per-sample losses are summed over and divided by: its
  // share of the mini-batch's mean. With context parallelism each is the
  // mean over a C-th of the sample's tokens, so C x D x N of them make it.
  [[nodiscard]] double loss_divisor() const { return static_cast<double>(global_batch()) * context_parallel; }

  // Under ZeRO 1, this replica's share of every stage's optimizer state.
  [[nodiscard]] std::optional<ZeroShare> zero_share() const {
    if (zero == 0) return std::nullopt;
    return ZeroShare{replicas, replica, float_bucket(models::kGradientBucketBytes)};
  }

  // The index of the first measured step.
  [[nodiscard]] int first_measured_step() const { return steps - measured_steps; }
};

// The most threads a rank may compute with (--threads-per-rank).
inline constexpr int kMaxThreadsPerRank = 1024;

// Throws InputError unless 1 <= threads <= kMaxThreadsPerRank.
void check_threads_per_rank(int threads);

// Throws InputError for options no run can have: steps, measured steps,
// threads per rank (above 1 on the cpu backend only), the watchdog, a partition that does not match the schedule or the model, and a
// split backward (I/W) unless `runs_split_backward` (the backend is a
// SplitBackwardBackend, training_backend.hpp); `backend` ("cpu", "cuda")
// names itself in that message.
void check_train_options(const TrainOptions& options, std::string_view backend,
                         bool runs_split_backward = false);

// The schedule validated and lowered, and the fault (if any) checked against it.
[[nodiscard]] schedules::Schedule lower_checked(const TrainOptions& options);

// The settings of a run of `options` on `lowered`; they point into both,
// which must outlive them.
[[nodiscard]] RunSettings make_run_settings(const TrainOptions& options,
                                            const schedules::Schedule& lowered);

// Throws InputError for a ZeRO stage the executor does not run (it runs 0
// and 1), ZeRO without replicas, or ZeRO with one stage holding both ends of
// a tied embedding (its two copies' shares differ); `num_stages` is K x V.
void check_zero(int zero, int replicas, const models::Model& model, int num_stages);

// Throws InputError for context parallelism the executor does not run: on a
// backend other than the CPU's, beside ZeRO, a model
// outside the llama family, or a gradient group (the schedule's
// data_parallel) that is not D x C.
void check_context_parallel(const TrainOptions& options, std::string_view backend);

// The index of the timeline of median step time (the lower median).
[[nodiscard]] std::size_t median_step(const std::vector<timelines::Timeline>& steps);

}  // namespace gpipe::exec
