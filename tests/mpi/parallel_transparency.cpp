// Data, tensor and context parallelism's transparency over MPI ("losses and
// weights equal the one-process run within 1e-5"), run as every process of a launch:
//   mpirun -np K*T*C*D parallel_transparency MODEL SCHEDULE K D M N STEPS OPTIMIZER [T [ZERO [C]]]
// Each process trains its part of its rank of its replica (D replicas of a
// K-stage pipeline whose blocks are split over T processes, M micro-batches
// of a replica's N samples, the optimizer state sharded over the replicas
// with ZeRO 1 when ZERO is 1, each sequence split over C processes whose
// weights are whole), then trains the same model alone on one stage
// with one micro-batch of the global batch D x N, and compares: its own
// stages' weights (a block's, the slice of the reference's its part holds),
// and on the reporter every step's loss, within
// tests/exec/transparency_support.hpp's tolerance (1e-5 relative; AdamW's
// weights 1e-3). Prints one line per process and exits 1 on a mismatch, 2
// on bad arguments.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/mpi/world_training.hpp"
#include "models/context_parallel.hpp"
#include "tests/exec/trainer_support.hpp"

namespace {

using namespace gpipe;
using exec::trainer_test::RunConfig;

constexpr double kTolerance = 1e-5;
constexpr double kAdamwWeightTolerance = 1e-3;

double relative(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0;
  double norm = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// The reference's values of layer `l` as part `part` of `parts` holds them:
// a block's slices (exec/cpu/layers/tensor_parallel_part.cpp), the rest whole.
std::vector<std::vector<float>> part_of(const models::Model& model, std::size_t l,
                                        const std::vector<std::vector<float>>& whole, int part, int parts,
                                        std::uint64_t seed) {
  if (!exec::cpu::splits(model.layers.at(l).kind)) return whole;
  const auto shapes = exec::cpu::make_layer(model, static_cast<int>(l), seed);
  std::vector<std::vector<float>> out;
  for (std::size_t p = 0; p < whole.size(); ++p) {
    out.push_back(exec::cpu::parameter_part(model, static_cast<int>(l), p, whole[p],
                                            shapes->parameters().at(p).value.shape(), part, parts));
  }
  return out;
}

int run(int argc, char** argv) {
  if (argc < 9 || argc > 12) {
    std::fprintf(stderr, "usage: %s MODEL SCHEDULE K D M N STEPS OPTIMIZER [T [ZERO [C]]]\n", argv[0]);
    return 2;
  }
  RunConfig c;
  c.model = argv[1];
  c.schedule = argv[2];
  c.stages = std::stoi(argv[3]);
  const int replicas = std::stoi(argv[4]);
  c.microbatches = std::stoi(argv[5]);
  c.batch = std::stoll(argv[6]);
  c.steps = std::stoi(argv[7]);
  c.optimizer.kind = *models::parse_optimizer(argv[8]);

  exec::mpi::MpiWorld world;
  exec::TrainOptions options = exec::trainer_test::options_for(c);
  options.schedule.data_parallel = replicas;
  options.tensor_parallel = argc >= 10 ? std::stoi(argv[9]) : 1;
  options.zero = argc >= 11 ? std::stoi(argv[10]) : 0;
  const int members = argc == 12 ? std::stoi(argv[11]) : 1;
  options.model = models::split_context_parallel(options.model, {.degree = members});
  options.schedule.data_parallel = replicas * members;  // the gradient group
  // K x V stages for the interleaved and V-shaped schedules.
  options.partition =
      models::partition_uniform(static_cast<int>(options.model.layers.size()), options.schedule.num_stages);
  const exec::TrainResult result = exec::mpi::train_in_world(world, options, "mpirun").result;

  RunConfig one = c;
  one.schedule = "gpipe";
  one.stages = 1;
  one.microbatches = 1;
  one.batch = c.batch * replicas;
  const exec::TrainResult reference = exec::cpu::train(exec::trainer_test::options_for(one));

  // This process's stages: the rank's, of the pipeline's uniform partition.
  const int parts = options.tensor_parallel;
  const int rank = (world.rank() / (parts * members)) % c.stages;
  const int part = world.rank() % parts;
  std::vector<int> layers;
  for (int s = 0; s < options.schedule.num_stages; ++s) {
    if (options.schedule.rank_of(schedules::Stage{s}).value == rank) {
      for (int l = options.partition.first_layer(s); l < options.partition.end_layer(s); ++l) layers.push_back(l);
    }
  }
  const std::string who =
      fmt::format("T={} C={} K={} D={}{} process {} (replica {}, rank {}, part {}, member {})", parts, members,
                  c.stages, replicas, options.zero > 0 ? fmt::format(" ZeRO {}", options.zero) : "", world.rank(),
                  world.rank() / (c.stages * parts * members), rank, part, (world.rank() / parts) % members);
  if (result.weights.size() != layers.size()) {
    std::printf("%s: %zu layers' weights, expected %zu\n", who.c_str(), result.weights.size(), layers.size());
    return 1;
  }
  const double weight_tolerance = c.optimizer.kind == models::Optimizer::adamw ? kAdamwWeightTolerance : kTolerance;
  double worst_weight = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& mine = result.weights[i];
    const auto l = static_cast<std::size_t>(layers[i]);
    std::vector<std::vector<float>> ref = reference.weights.at(l);
    if (parts > 1) ref = part_of(models::unsplit_context(options.model), l, ref, part, parts, options.seed);
    for (std::size_t p = 0; p < ref.size(); ++p) worst_weight = std::max(worst_weight, relative(mine.at(p), ref[p]));
  }
  double worst_loss = 0;
  if (result.reporter) {
    if (result.losses.size() != reference.losses.size()) {
      std::printf("%s: %zu losses, expected %zu\n", who.c_str(), result.losses.size(), reference.losses.size());
      return 1;
    }
    for (std::size_t s = 0; s < reference.losses.size(); ++s) {
      worst_loss = std::max(worst_loss, std::abs(result.losses[s] - reference.losses[s]) / std::abs(reference.losses[s]));
    }
  }
  const bool ok = worst_weight <= weight_tolerance && worst_loss <= kTolerance;
  std::printf("%s: %s, weights within %.3g, losses within %.3g%s\n", who.c_str(), ok ? "equal" : "DIFFERENT",
              worst_weight, worst_loss, result.reporter ? "" : " (not the reporter)");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
