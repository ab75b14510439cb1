// Shared set-up of the trainer tests: TrainOptions for a model SPEC, a
// schedule and (K, M, N), with the uniform partition; and the error norms the
// transparency tests state.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "models/checkpointing.hpp"
#include "models/model_spec.hpp"
#include "models/partition.hpp"
#include "schedules/generate.hpp"

namespace gpipe::exec::trainer_test {

// The small models the trainer tests run: 4 blocks, so 5 layers (the MLP) and
// 6 layers (the transformer, with its embedding and head).
inline constexpr const char* kMlp = "mlp:layers=4,hidden=16";
inline constexpr const char* kTransformer = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";

struct RunConfig {
  std::string model = "mlp:layers=4,hidden=16";
  std::string schedule = "gpipe";
  int stages = 1;
  int microbatches = 1;
  std::int64_t batch = 4;
  schedules::RecomputePolicy recompute = schedules::RecomputePolicy::never;
  // With recompute full: the checkpoints (nullopt: the trainer's default, uniform 1).
  std::optional<models::Checkpointing> checkpointing;
  schedules::BackwardOrder backward_order = schedules::BackwardOrder::reverse;
  int steps = 3;
  OptimizerConfig optimizer;
  std::uint64_t seed = 7;
};

inline TrainOptions options_for(const RunConfig& c) {
  TrainOptions o;
  o.model = models::parse_model(c.model);
  schedules::ScheduleOptions s;
  s.num_ranks = c.stages;
  s.num_microbatches = c.microbatches;
  s.recompute = c.recompute;
  s.backward_order = c.backward_order;
  o.schedule = schedules::generate(c.schedule, s);
  o.partition = models::partition_uniform(static_cast<int>(o.model.layers.size()), c.stages);
  o.checkpointing = c.checkpointing;
  o.batch = c.batch;
  o.steps = c.steps;
  o.seed = c.seed;
  o.optimizer = c.optimizer;
  o.watchdog_seconds = 60;
  return o;
}

inline OptimizerConfig momentum(float learning_rate) {
  OptimizerConfig c;
  c.kind = models::Optimizer::momentum;
  c.learning_rate = learning_rate;
  return c;
}

inline OptimizerConfig adamw(float learning_rate) {
  OptimizerConfig c;
  c.kind = models::Optimizer::adamw;
  c.learning_rate = learning_rate;
  return c;
}

// ||a - b|| / ||b|| over one tensor's values (the Euclidean norm, in double).
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0;
  double norm = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

}  // namespace gpipe::exec::trainer_test
