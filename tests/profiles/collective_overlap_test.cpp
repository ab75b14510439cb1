// What the analytic profile shows of a stage's collectives: a
// context-parallel model's (models/context_parallel.hpp) priced on its group's
// link, Llama 3's all-gather exposed in its pass, the ring only where the
// attention kernel does not hide it; and with --tp-comm-overlap the tensor
// group's only where the GEMMs do not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/context_parallel.hpp"
#include "base/error.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/collectives.hpp"
#include "profiles/device.hpp"

namespace gpipe::profiles {
namespace {

using models::Collective;
using models::ContextParallelForm;
using models::DType;
using models::Layer;
using models::Model;

Model context_split(int c, ContextParallelForm form) {
  return models::split_context_parallel(
      models::parse_model("llama:layers=2,hidden=256,heads=8,kv_heads=2,ffn=704,seq=512,vocab=1000"),
      {.degree = c, .form = form});
}

// The all-gather form adds its collectives to the passes, exposed, on the
// context link; the ring adds only what the attention kernel does not hide.
TEST(ContextParallel, TheProfilePricesTheGroupsCollectives) {
  const Device h100 = device_named("h100");
  const CollectiveLink slow{.latency_us = 5, .bandwidth_GBps = 0.5};
  AnalyticOptions options;
  options.context_link = slow;
  const Model gathered = context_split(4, ContextParallelForm::all_gather);
  const Layer& block = gathered.layers[1];
  const PassTimes comm = analytic_collective_times(gathered, block, h100, DType::bf16, 2, options);
  const std::int64_t bytes = 512 * 2 * 2 * 32 * 2 * 2;  // S kv elements, b = 2, bf16
  const auto us = [&](Collective c) {
    return static_cast<double>(fastest_collective(c, 4, bytes, slow).ns) / 1e3;
  };
  EXPECT_DOUBLE_EQ(comm.fwd_us, us(Collective::all_gather));
  EXPECT_DOUBLE_EQ(comm.bwd_input_us, us(Collective::all_gather) + us(Collective::reduce_scatter));
  EXPECT_DOUBLE_EQ(comm.bwd_weight_us, 0);
  // On the device's own link by default: faster.
  EXPECT_LT(analytic_collective_times(gathered, block, h100, DType::bf16, 2).fwd_us, comm.fwd_us);
  // The ring beside the attention: on a slow link it shows less than its
  // time (the attention hides some), on a fast one nothing.
  const Model ring = context_split(4, ContextParallelForm::ring);
  const PassTimes slow_ring =
      analytic_collective_times(ring, ring.layers[1], h100, DType::bf16, 2, options);
  EXPECT_GT(slow_ring.fwd_us, 0);
  EXPECT_LT(slow_ring.fwd_us, us(Collective::all_gather));
  options.context_link = CollectiveLink{.latency_us = 0, .bandwidth_GBps = 1e5};
  EXPECT_EQ(analytic_collective_times(ring, ring.layers[1], h100, DType::bf16, 2, options).fwd_us, 0);
  // The profile records the group.
  EXPECT_EQ(analytic_profile(gathered, h100, DType::bf16, std::vector<int>{1}).context_parallel, 4);
}

}  // namespace
}  // namespace gpipe::profiles

namespace gpipe::profiles {
namespace {

// --tp-comm-overlap: the tensor group's all-gathers and reduce-scatters of a
// pass show only what the pass's GEMMs do not hide; without sequence
// parallelism it is refused.
TEST(TensorParallelOverlap, APassShowsWhatItsGemmsDoNotHide) {
  const Device h100 = device_named("h100");
  const Model split = models::split_tensor_parallel(
      models::parse_model("llama:layers=2,hidden=8192,heads=8,kv_heads=8,ffn=22016,seq=2048,vocab=1000"),
      {.degree = 4, .sequence_parallel = true});
  const Layer& block = split.layers[1];
  AnalyticOptions overlap;
  overlap.tp_comm_overlap = true;
  const PassTimes plain = analytic_collective_times(split, block, h100, DType::bf16, 1);
  ASSERT_GT(plain.fwd_us, 0);
  // A fast link: the GEMMs hide everything.
  EXPECT_EQ(analytic_collective_times(split, block, h100, DType::bf16, 1, overlap), PassTimes{});
  // A slow one: what is left is the collectives less the GEMMs' time, pass by pass.
  Device slow = h100;
  slow.link_GBps = 0.05;
  const PassTimes exposed = analytic_collective_times(split, block, slow, DType::bf16, 1, overlap);
  const PassTimes whole = analytic_collective_times(split, block, slow, DType::bf16, 1);
  const PassTimes compute = analytic_pass_times(split, block, slow, DType::bf16, 1);
  EXPECT_GT(exposed.fwd_us, 0);
  EXPECT_LT(exposed.fwd_us, whole.fwd_us);
  EXPECT_GT(exposed.fwd_us, whole.fwd_us - compute.fwd_us);  // the GEMMs are less than the whole pass
  // Without sequence parallelism, one line.
  const Model all_reduce = models::split_tensor_parallel(
      models::parse_model("llama:layers=2,hidden=8192,heads=8,kv_heads=8,ffn=22016,seq=2048,vocab=1000"), {.degree = 4});
  try {
    (void)analytic_profile(all_reduce, h100, DType::bf16, std::vector<int>{1}, overlap);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs "
              "(Megatron-LM's); give --sequence-parallel");
  }
}

}  // namespace
}  // namespace gpipe::profiles
