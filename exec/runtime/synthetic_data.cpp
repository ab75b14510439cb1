#include "exec/runtime/synthetic_data.hpp"

#include <cmath>
#include <numbers>

namespace gpipe::exec {

namespace {

// splitmix64: a well-mixed 64-bit stream from any seed, identical on every
// platform (std::normal_distribution is not), so the data is reproducible.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1).
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  // Box-Muller.
  double normal() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
  }

 private:
  std::uint64_t state_;
};

// One stream per sample, so a sample is the same whatever the batch size.
Random sample_stream(std::uint64_t seed, int step, std::int64_t sample) {
  Random mix(seed ^ 0xD1B54A32D192ED03ULL);
  const std::uint64_t a = mix.next() + static_cast<std::uint64_t>(step) * 0x9E3779B97F4A7C15ULL;
  return Random(a ^ (static_cast<std::uint64_t>(sample) * 0xC2B2AE3D27D4EB4FULL));
}

constexpr int kRecurrenceMultiplier = 5;
constexpr int kRecurrenceIncrement = 3;
constexpr int kNoiseOneIn = 8;
// DiT's diffusion runs 1000 steps; a timestep is one of them.
constexpr int kDiffusionSteps = 1000;

}  // namespace

SyntheticTask::SyntheticTask(const models::Model& model, std::uint64_t seed)
    : model_(&model), seed_(seed) {}

Tensor tokens_at(const Tensor& sequences, const std::vector<std::int64_t>& positions) {
  const std::int64_t rows = sequences.dim(0);
  const std::int64_t seq = sequences.dim(1);
  const auto width = static_cast<std::int64_t>(positions.size());
  Tensor out({rows, width}, ElementType::i32);
  const auto from = sequences.i32();
  auto to = out.i32();
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t t = 0; t < width; ++t) {
      to[static_cast<std::size_t>(n * width + t)] = from[static_cast<std::size_t>(n * seq + positions[static_cast<std::size_t>(t)])];
    }
  }
  return out;
}

Batch SyntheticTask::batch(int step, std::int64_t samples) const {
  const std::int64_t hidden = model_->hidden;
  if (model_->family == "dit") return diffusion_batch(step, samples);
  if (model_->family != "transformer" && model_->family != "llama") {
    Batch batch{Tensor({samples, hidden}), Tensor({samples, hidden})};
    auto x = batch.inputs.f32();
    auto t = batch.targets.f32();
    for (std::int64_t n = 0; n < samples; ++n) {
      Random random = sample_stream(seed_, step, n);
      float* row = x.data() + n * hidden;
      for (std::int64_t j = 0; j < hidden; ++j) row[j] = static_cast<float>(random.normal());
      for (std::int64_t j = 0; j < hidden; ++j) t[n * hidden + j] = 0.5F * row[(j + 1) % hidden];
    }
    return batch;
  }

  const std::int64_t seq = model_->seq;
  const int vocab = model_->vocab;
  Batch batch{Tensor({samples, seq}, ElementType::i32), Tensor({samples, seq}, ElementType::i32)};
  auto ids = batch.inputs.i32();
  auto targets = batch.targets.i32();
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(seq + 1));
  for (std::int64_t n = 0; n < samples; ++n) {
    Random random = sample_stream(seed_, step, n);
    tokens[0] = random.below(vocab);
    for (std::size_t s = 1; s < tokens.size(); ++s) {
      tokens[s] = random.below(kNoiseOneIn) == 0
                      ? random.below(vocab)
                      : (kRecurrenceMultiplier * tokens[s - 1] + kRecurrenceIncrement) % vocab;
    }
    for (std::int64_t s = 0; s < seq; ++s) {
      ids[n * seq + s] = tokens[s];
      targets[n * seq + s] = tokens[s + 1];
    }
  }
  return batch;
}

Batch SyntheticTask::diffusion_batch(int step, std::int64_t samples) const {
  const std::int64_t tokens = model_->seq;
  const std::int64_t patch_in = static_cast<std::int64_t>(model_->patch) * model_->patch * model_->channels;
  const std::int64_t patch_out = 2 * patch_in;
  const std::int64_t width = tokens * patch_in + 2;
  Batch batch{Tensor({samples, width}), Tensor({samples, tokens, patch_out})};
  float* x = batch.inputs.f32().data();
  float* t = batch.targets.f32().data();
  for (std::int64_t n = 0; n < samples; ++n) {
    Random random = sample_stream(seed_, step, n);
    float* row = x + n * width;
    for (std::int64_t j = 0; j < tokens * patch_in; ++j) row[j] = static_cast<float>(random.normal());
    row[tokens * patch_in] = static_cast<float>(random.below(kDiffusionSteps));
    row[tokens * patch_in + 1] = static_cast<float>(random.below(model_->classes));
    float* target = t + n * tokens * patch_out;
    for (std::int64_t k = 0; k < tokens; ++k) {
      for (std::int64_t j = 0; j < patch_out; ++j) {
        target[k * patch_out + j] = 0.5F * row[k * patch_in + j % patch_in];
      }
    }
  }
  return batch;
}

}  // namespace gpipe::exec
