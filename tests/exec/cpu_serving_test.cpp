// gpipe-run infer's CPU stream (exec/inference/cpu_serving.hpp): each item's
// output equals a one-stage forward of it, bit for bit, whatever the stages;
// items enter as the workload says and complete in order; the measured
// memory peaks equal the simulator's rules where the order of events is fixed
// (one item in flight).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "exec/inference/cpu_serving.hpp"
#include "models/model.hpp"
#include "models/model_spec.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec::inference {
namespace {

using gpipe::testing::error_of;

ServingResult run(const models::Model& model, std::vector<int> partition, int requests, int in_flight,
                 std::optional<double> interval_us = std::nullopt) {
  ServingRequest rq;
  rq.model = &model;
  rq.layers_per_stage = std::move(partition);
  rq.micro_batch_size = 2;
  rq.workload = {.requests = requests, .in_flight = in_flight, .arrival_interval_us = interval_us};
  rq.seed = 3;
  rq.keep_outputs = true;
  return run_cpu_serving(rq);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.bytes() == b.bytes() &&
         std::memcmp(a.f32().data(), b.f32().data(), static_cast<std::size_t>(a.bytes())) == 0;
}

TEST(CpuStream, EveryItemsOutputIsTheOneStageForwardBitForBit) {
  for (const char* spec : {"transformer:layers=2,hidden=16,heads=2,seq=8,vocab=32",
                           "llama:layers=2,hidden=16,heads=2,kv_heads=1,ffn=24,seq=8,vocab=32",
                           "dit:layers=2,hidden=16,heads=2,tokens=4,classes=3"}) {
    const models::Model model = models::parse_model(spec);
    const int layers = static_cast<int>(model.layers.size());  // 4: two blocks between an embedding and a head
    const ServingResult one = run(model, {layers}, 5, 2);
    for (const std::vector<int>& partition : {std::vector<int>{1, layers - 1}, std::vector<int>{1, 1, 1, 1}}) {
      const ServingResult many = run(model, partition, 5, 3);
      ASSERT_EQ(many.outputs.size(), 5U);
      for (std::size_t r = 0; r < 5; ++r) {
        EXPECT_TRUE(same_bits(many.outputs[r], one.outputs[r])) << spec << " K=" << partition.size() << " item " << r;
      }
    }
  }
}

TEST(CpuStream, ItemsEnterAsTheClosedLoopSaysAndCompleteInOrder) {
  const models::Model model = models::parse_model("transformer:layers=2,hidden=16,heads=2,seq=8,vocab=32");
  const ServingResult r = run(model, {2, 2}, 9, 2);
  const auto& items = r.run.items;
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i].arrival_ns, items[i].admitted_ns) << i;  // closed loop: issued as admitted
    EXPECT_GT(items[i].completed_ns, items[i].admitted_ns) << i;
    if (i > 0) {
      EXPECT_GT(items[i].completed_ns, items[i - 1].completed_ns) << i;
    }
    if (i >= 2) {
      EXPECT_GE(items[i].admitted_ns, items[i - 2].completed_ns) << i;  // at most 2 in flight
    }
  }
  // Every forward and hand-over is in the timeline: 9 F per stage, 9 SEND_F and 9 RECV_F.
  EXPECT_EQ(r.run.timeline.actions.size(), 9U * 4U);
  EXPECT_EQ(r.run.timeline.info.source, "cpu");
  EXPECT_EQ(r.run.busy_ns.size(), 2U);
}

TEST(CpuStream, OpenLoopItemsArriveOnTime) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const ServingResult r = run(model, {1, 2}, 4, 1, 2000.0);  // one every 2 ms
  for (std::size_t i = 0; i < r.run.items.size(); ++i) {
    EXPECT_EQ(r.run.items[i].arrival_ns, static_cast<std::int64_t>(i) * 2'000'000);
    EXPECT_GE(r.run.items[i].admitted_ns, r.run.items[i].arrival_ns);
  }
}

TEST(CpuStream, OneItemInFlightHoldsItsInputAndOutputDuringEachForward) {
  const models::Model model = models::parse_model("llama:layers=2,hidden=16,heads=2,kv_heads=1,ffn=24,seq=8,vocab=32");
  const ServingResult r = run(model, {2, 1, 1}, 4, 1);
  const auto bytes = [&](int layer) { return models::bytes_at(model.layers[static_cast<std::size_t>(layer)], 2, models::DType::fp32); };
  // Stage 0 (embedding, block): its output; stage 1 (block): input and output;
  // stage 2 (head): input and the per-sample loss.
  EXPECT_EQ(r.run.peak_bytes[0], bytes(1).output_bytes);
  EXPECT_EQ(r.run.peak_bytes[1], bytes(2).input_bytes + bytes(2).output_bytes);
  EXPECT_EQ(r.run.peak_bytes[2], bytes(3).input_bytes + bytes(3).output_bytes);
  EXPECT_EQ(r.static_bytes[1], models::param_bytes(model.layers[2], models::DType::fp32));
}

// dit's cache=1: each stream (item r is stream r mod B's) carries its last
// chunk's keys and values from item to item, whatever the stages.
TEST(CpuStream, CachedDitCarriesEachStreamsChunkBitForBit) {
  const models::Model model = models::parse_model("dit:layers=2,hidden=16,heads=2,tokens=4,classes=3,cache=1");
  const ServingResult one = run(model, {4}, 6, 2);
  for (const std::vector<int>& partition : {std::vector<int>{1, 3}, std::vector<int>{1, 1, 1, 1}}) {
    const ServingResult many = run(model, partition, 6, 2);
    for (std::size_t r = 0; r < 6; ++r) {
      EXPECT_TRUE(same_bits(many.outputs[r], one.outputs[r])) << "K=" << partition.size() << " item " << r;
    }
  }
  // With one stream, item 1 follows item 0's chunk; with two it starts its own: the cache counts.
  const ServingResult single = run(model, {4}, 2, 1);
  EXPECT_TRUE(same_bits(single.outputs[0], one.outputs[0]));
  EXPECT_FALSE(same_bits(single.outputs[1], one.outputs[1]));
}

// Each block keeps 2TH floats a sample for each stream in flight, from the
// start (the simulator's state_bytes, min(B, R) times), and the rank's peak
// is that and its item's input and output.
TEST(CpuStream, CachedDitHoldsItsStateThroughout) {
  const models::Model model = models::parse_model("dit:layers=2,hidden=16,heads=2,tokens=4,classes=3,cache=1");
  const ServingResult r = run(model, {2, 1, 1}, 5, 3);
  const std::int64_t per_stream = 2 * 2 * 4 * 16 * 4;  // K and V, b = 2, T = 4, H = 16, fp32
  EXPECT_EQ(per_stream, models::bytes_at(model.layers[1], 2, models::DType::fp32).state_bytes);
  EXPECT_EQ(r.run.state_bytes, (std::vector<std::int64_t>{3 * per_stream, 3 * per_stream, 0}));
  const ServingResult one = run(model, {2, 1, 1}, 4, 1);
  const auto bytes = [&](int layer) { return models::bytes_at(model.layers[static_cast<std::size_t>(layer)], 2, models::DType::fp32); };
  EXPECT_EQ(one.run.peak_bytes[1], per_stream + bytes(2).input_bytes + bytes(2).output_bytes);
}

TEST(CpuStream, RefusesAPartitionThatDoesNotCoverTheModel) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");  // and its loss layer
  EXPECT_EQ(error_of([&] { (void)run(model, {1, 1}, 2, 1); }),
            "--partition 1,1: it must give every one of the model's 3 layers to a stage");
}

}  // namespace
}  // namespace gpipe::exec::inference
