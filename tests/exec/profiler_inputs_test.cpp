// The host-side helpers the CPU and CUDA profilers share: the inputs' shapes
// and bytes, and that they are the run's own first mini-batch; the loss
// gradient and its generator's seed, the sizes' and the passes' checks with
// their exact messages, the per-layer bytes a pass records, and the median.
#include "exec/profiling/profiler_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/model_spec.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec {
namespace {

using testing::error_of;

// Same type, shape and values (bit for bit: drawn from the same generator state).
bool same(const Tensor& a, const Tensor& b) {
  if (a.empty() || b.empty()) return a.empty() && b.empty();
  if (a.type() != b.type() || a.shape() != b.shape()) return false;
  if (a.type() == ElementType::i32) return std::ranges::equal(a.i32(), b.i32());
  return std::ranges::equal(a.f32(), b.f32());
}

constexpr const char* kSpecs[] = {"mlp:layers=2,hidden=8", "transformer:layers=1,hidden=16,heads=2,seq=4,vocab=32",
                                   "llama:layers=1,hidden=16,heads=2,kv_heads=1,ffn=24,seq=4,vocab=32",
                                   "dit:layers=1,hidden=16,heads=2,tokens=4,classes=3"};

TEST(ProfileInputs, ShapesAndBytesFollowTheModel) {
  for (const char* spec : kSpecs) {
    const models::Model model = models::parse_model(spec);
    const SizeInputs s = training_size_inputs(model, 3, 1);
    EXPECT_EQ(s.micro_batch_size, 3);
    EXPECT_EQ(s.input.bytes(), models::bytes_at(model.layers.front(), 3, models::DType::fp32).input_bytes) << spec;
    ASSERT_EQ(s.targets.size(), model.layers.size());
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      const models::Layer& l = model.layers[i];
      EXPECT_EQ(s.targets[i].bytes(), 3 * (l.target_elems * 4 + l.target_index_bytes)) << spec << " " << l.name;
    }
    EXPECT_FALSE(s.targets.back().empty()) << spec << ": the loss layer gets a target";
  }
}

// Not random values of the same shapes: the very samples the run trains on
// at step 0 (a llama block ran 2 to 4 % faster on them than on random ids).
TEST(ProfileInputs, AreTheRunsFirstMiniBatch) {
  for (const char* spec : kSpecs) {
    const models::Model model = models::parse_model(spec);
    const Batch batch = SyntheticTask(model, 9).batch(0, 2);
    const SizeInputs s = training_size_inputs(model, 2, 9);
    EXPECT_TRUE(same(s.input, batch.inputs)) << spec;
    EXPECT_TRUE(same(s.targets.back(), batch.targets)) << spec;
    EXPECT_FALSE(same(s.input, training_size_inputs(model, 2, 10).input)) << spec << ": the seed decides";
  }
}

TEST(ProfileInputs, TokensAreInTheVocabulary) {
  const models::Model model = models::parse_model("transformer:layers=1,hidden=16,heads=2,seq=4,vocab=32");
  const SizeInputs s = training_size_inputs(model, 2, 7);
  ASSERT_EQ(s.input.type(), ElementType::i32);  // the embedding reads token ids
  EXPECT_EQ(s.input.shape(), (std::vector<std::int64_t>{2, 4}));
  for (const std::int32_t id : s.input.i32()) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 32);
  }
}

TEST(ProfileInputs, LossGradientIsTheMeanOverTheMicroBatch) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  std::mt19937_64 rng(1);
  const Tensor g = output_gradient({4}, model.layers.back(), 4, rng);
  ASSERT_EQ(g.shape(), std::vector<std::int64_t>{4});
  for (const float v : g.f32()) EXPECT_EQ(v, 0.25F);
  const Tensor h = output_gradient({2, 8}, model.layers.front(), 2, rng);
  EXPECT_EQ(h.shape(), (std::vector<std::int64_t>{2, 8}));
  // N(0, 0.01): 16 values within 10 standard deviations.
  for (const float v : h.f32()) EXPECT_LT(std::abs(v), 0.1F);
}

TEST(ProfileInputs, SizesAreChecked) {
  EXPECT_EQ(checked_micro_batch_sizes(std::vector<int>{4, 1, 2}), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(error_of([] { (void)checked_micro_batch_sizes(std::vector<int>{}); }),
            "--micro-batch-sizes: no size given");
  EXPECT_EQ(error_of([] { (void)checked_micro_batch_sizes(std::vector<int>{2, 0}); }),
            "--micro-batch-sizes: sizes must be at least 1, got 0");
  EXPECT_EQ(error_of([] { (void)checked_micro_batch_sizes(std::vector<int>{2, 2}); }),
            "--micro-batch-sizes: 2 is given more than once");
}

TEST(ProfileInputs, PassCountsAreChecked) {
  EXPECT_EQ(error_of([] { check_pass_counts(0, 1); }), "no error");
  EXPECT_EQ(error_of([] { check_pass_counts(-1, 5); }), "--warmup must be 0 or more, got -1");
  EXPECT_EQ(error_of([] { check_pass_counts(2, 0); }), "--repeats must be at least 1, got 0");
  // The warm-up is checked first.
  EXPECT_EQ(error_of([] { check_pass_counts(-2, 0); }), "--warmup must be 0 or more, got -2");
}

// Seeded apart from the weights and inputs (which `seed` itself seeds), and
// the same on every backend: the profiles' gradients are drawn alike.
TEST(ProfileInputs, OutputGradientGeneratorIsSeededApartFromTheWeights) {
  std::mt19937_64 drawn = output_gradient_generator(3);
  std::mt19937_64 expected(3ULL ^ 0x9e3779b97f4a7c15ULL);
  EXPECT_EQ(drawn(), expected());
  std::mt19937_64 plain(3);
  EXPECT_NE(output_gradient_generator(3)(), plain());
}

TEST(ProfileInputs, SampleBytesAreSetAtTheFirstPassAndCheckedAfter) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  const models::Layer& layer = model.layers.front();
  profiles::ProfileSample sample;
  record_sample_bytes(sample, /*first_pass=*/true, layer, 4, 128, 96, 256);
  EXPECT_EQ(sample.micro_batch_size, 4);
  EXPECT_EQ(sample.input_bytes, 128);
  EXPECT_EQ(sample.output_bytes, 96);
  EXPECT_EQ(sample.activation_bytes, 256);
  EXPECT_NO_THROW(record_sample_bytes(sample, /*first_pass=*/false, layer, 4, 128, 96, 256));
  try {
    record_sample_bytes(sample, /*first_pass=*/false, layer, 4, 128, 96, 260);
    ADD_FAILURE() << "no RunError";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()), "layer " + layer.name + ": the stash held 256 bytes, then 260 bytes at b=4");
  }
  EXPECT_EQ(sample.activation_bytes, 256);
}

TEST(ProfileInputs, MedianIsTheMiddleOrTheMeanOfTheTwo) {
  EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median({200.0, 301.0}), 250.5);
  EXPECT_EQ(median({4.0}), 4.0);
  EXPECT_THROW((void)median({}), std::invalid_argument);
}

}  // namespace
}  // namespace gpipe::exec
