// The llama and DiT kinds of the CUDA backend, and flash attention, on the
// host (no GPU): every kind the CPU backend has finds its CUDA twin, flash
// models are no longer refused, and each new kind checks what it is handed
// (its parameters, its context, the block shapes the CPU blocks refuse, the
// input, target and stash of a forward or backward) with the same lines as
// the CPU twin, before anything touches a device. Tensors live in
// FakeDeviceMemory and are never read or written.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cuda/backend/device_link.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/layers/layer_kinds.hpp"
#include "exec/layers/memory_account.hpp"
#include "models/families.hpp"
#include "models/layer_layout.hpp"
#include "models/model.hpp"
#include "models/model_spec.hpp"
#include "tests/cuda/host/fake_layer_context.hpp"
#include "tests/error_of.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cuda {
namespace {

using cpu::cases::LayerCase;
using gpipe::testing::error_of;
using gpipe::testing::logic_error_of;
using test::layout_parameters;
using test::UnusedHandles;

// The kinds the llama and DiT families added, with either attention.
std::vector<LayerCase> new_kind_cases() {
  std::vector<LayerCase> out;
  for (const LayerCase& c : cpu::cases::layer_cases()) {
    const std::string& k = c.kind();
    if (k == models::layer_kind::token_embedding || k == models::layer_kind::llama_block ||
        k == models::layer_kind::rms_head || k == models::layer_kind::dit_embed ||
        k == models::layer_kind::dit_block || k == models::layer_kind::dit_head) {
      out.push_back(c);
    }
  }
  return out;
}

std::string prefix(const LayerCase& c) {
  return "layer " + c.spec().name + " (" + c.kind() + "): ";
}

TEST(DeviceKindsHost, EveryCpuKindFindsItsTwin) {
  const std::map<std::string_view, layers::DeviceLayerMaker> twins{
      {models::layer_kind::mlp_block, &layers::make_mlp_block},
      {models::layer_kind::mse_loss, &layers::make_mse_loss},
      {models::layer_kind::embedding, &layers::make_embedding},
      {models::layer_kind::transformer_block, &layers::make_transformer_block},
      {models::layer_kind::lm_head, &layers::make_lm_head},
      {models::layer_kind::token_embedding, &layers::make_token_embedding},
      {models::layer_kind::llama_block, &layers::make_llama_block},
      {models::layer_kind::rms_head, &layers::make_rms_head},
      {models::layer_kind::dit_embed, &layers::make_dit_embed},
      {models::layer_kind::dit_block, &layers::make_dit_block},
      {models::layer_kind::dit_head, &layers::make_dit_head},
  };
  std::size_t kinds_seen = 0;
  for (const LayerCase& c : cpu::cases::layer_cases()) {
    ASSERT_TRUE(twins.contains(c.kind())) << c.label;
    EXPECT_EQ(layers::device_layer_maker(c.model, c.spec()), twins.at(c.kind())) << c.label;
    ++kinds_seen;
  }
  EXPECT_EQ(kinds_seen, 15U) << "every case of cpu_layer_cases.hpp";
}

TEST(DeviceKindsHost, AKindTheBackendLacksIsNamed) {
  models::Layer conv;
  conv.name = "stem";
  conv.kind = "conv";
  EXPECT_EQ(error_of([&] { (void)layers::device_layer_maker(models::build_mlp(1, 8), conv); }),
            "make_device_layer: layer stem has kind 'conv', which the CUDA backend lacks");
}

// make_device_layer used to refuse attn=flash; now every layer of a flash
// model finds its kind, and make_device_layer goes on to the context check
// (the first thing after that a host can see).
TEST(DeviceKindsHost, FlashModelsAreNoLongerRefused) {
  int flash_cases = 0;
  for (const LayerCase& c : cpu::cases::layer_cases()) {
    if (c.model.attention != models::Attention::flash) continue;
    ++flash_cases;
    for (const models::Layer& spec : c.model.layers) {
      EXPECT_EQ(error_of([&] { (void)layers::device_layer_maker(c.model, spec); }), "no error")
          << c.label << " " << spec.name;
    }
    EXPECT_EQ(logic_error_of([&] { (void)make_device_layer(c.model, c.index, 1, LayerContext{}); }),
              prefix(c) + "the layer context has no allocator")
        << c.label;
  }
  EXPECT_GE(flash_cases, 3) << "a transformer, a llama and a dit model";
}

TEST(DeviceKindsHost, NewKindsAcceptTheirLayoutsParametersWithEitherAttention) {
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  UnusedHandles handles;
  const LayerContext context = handles.context(allocator);
  for (const LayerCase& c : new_kind_cases()) {
    std::unique_ptr<DeviceLayer> layer;
    ASSERT_NO_THROW(layer = layers::device_layer_maker(c.model, c.spec())(
                        c.model, c.spec(), layout_parameters(allocator, c.model, c.spec()), context))
        << c.label;
    EXPECT_EQ(layer->spec(), c.spec()) << c.label;
    const auto layout = models::layer_layout(c.model, c.spec());
    ASSERT_EQ(layer->parameters().size(), layout.parameters.size()) << c.label;
    for (std::size_t i = 0; i < layout.parameters.size(); ++i) {
      EXPECT_EQ(layer->parameters()[i].name, layout.parameters[i].name) << c.label;
    }
  }
  EXPECT_EQ(allocator.stats().live_allocations, 0) << "every parameter freed with its layer";
}

TEST(DeviceKindsHost, NewKindsRefuseParametersOutOfOrderAndAnIncompleteContext) {
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  UnusedHandles handles;
  const LayerContext context = handles.context(allocator);
  for (const LayerCase& c : new_kind_cases()) {
    const layers::DeviceLayerMaker make = layers::device_layer_maker(c.model, c.spec());
    layers::Parameters wrong = layout_parameters(allocator, c.model, c.spec());
    const std::size_t count = wrong.size();
    if (count >= 2) {
      std::swap(wrong[0], wrong[1]);
    } else {
      wrong.clear();
    }
    EXPECT_EQ(logic_error_of([&] { (void)make(c.model, c.spec(), std::move(wrong), context); }),
              prefix(c) + "the device parameters are not the CPU layer's " +
                  std::to_string(count) + " f32 parameters in order")
        << c.label;
    EXPECT_EQ(logic_error_of([&] {
                (void)make(c.model, c.spec(), layout_parameters(allocator, c.model, c.spec()),
                           LayerContext{&allocator, nullptr, nullptr});
              }),
              prefix(c) + "the layer context has no BLAS handle")
        << c.label;
  }
}

// A block shape the CPU block refuses, the CUDA block refuses with the same line.
void expect_same_refusal(const models::Model& model, int index) {
  const models::Layer& spec = model.layers[static_cast<std::size_t>(index)];
  const std::string cpu_error = error_of([&] { (void)cpu::make_layer(model, index, 1); });
  ASSERT_NE(cpu_error, "no error") << spec.kind;
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  UnusedHandles handles;
  EXPECT_EQ(error_of([&] {
              (void)layers::device_layer_maker(model, spec)(
                  model, spec, layout_parameters(allocator, model, spec), handles.context(allocator));
            }),
            cpu_error);
}

TEST(DeviceKindsHost, BlocksRefuseTheShapesTheCpuBlocksRefuse) {
  models::Model llama = cpu::cases::small_llama();
  llama.kv_heads = 3;  // does not divide 4 heads
  expect_same_refusal(llama, 1);
  EXPECT_EQ(error_of([&] { (void)cpu::make_layer(llama, 1, 1); }),
            "layer block0 (llama_block): hidden 8, heads 4, kv_heads 3 and ffn width 12 do not "
            "make a block (heads must split hidden into even head widths, kv_heads must divide "
            "heads)");
  models::Model dit = cpu::cases::small_dit();
  dit.heads = 3;  // does not split hidden 8
  expect_same_refusal(dit, 1);
}

// The forward's and backward's argument checks run before any device work, so
// a host can see them; the CPU twin refuses the same input with the same line.
TEST(DeviceKindsHost, NewKindsCheckInputTargetAndStashLikeTheirCpuTwins) {
  const std::map<std::string_view, std::string> expected_input{
      {models::layer_kind::token_embedding, "i32[b,5]"},
      {models::layer_kind::llama_block, "f32[b,5,8]"},
      {models::layer_kind::rms_head, "f32[b,5,8]"},
      {models::layer_kind::dit_embed, "f32[b,12]"},  // T P P C + 2 = 5 * 2 + 2
      {models::layer_kind::dit_block, "f32[b,6,8]"},  // T + 1 rows
      {models::layer_kind::dit_head, "f32[b,6,8]"},
  };
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  UnusedHandles handles;
  const LayerContext context = handles.context(allocator);
  for (const LayerCase& c : new_kind_cases()) {
    std::unique_ptr<DeviceLayer> layer = layers::device_layer_maker(c.model, c.spec())(
        c.model, c.spec(), layout_parameters(allocator, c.model, c.spec()), context);
    const std::unique_ptr<cpu::Layer> twin = cpu::make_layer(c.model, c.index, 1);
    MemoryAccount account;
    DeviceStash stash;
    const std::string device_error = error_of([&] {
      (void)layer->forward(DeviceTensor(allocator, {3, 1}, DeviceType::f32), nullptr, stash,
                           &account);
    });
    EXPECT_EQ(device_error, prefix(c) + "input is f32[3,1], expected " + expected_input.at(c.kind()))
        << c.label;
    cpu::Stash cpu_stash;
    EXPECT_EQ(device_error, error_of([&] {
                (void)twin->forward(Tensor({3, 1}), nullptr, cpu_stash, nullptr);
              }))
        << c.label;
    if (c.is_loss()) {
      const auto shape = models::layer_layout(c.model, c.spec()).kept_shape(0, 3);
      EXPECT_EQ(error_of([&] {
                  (void)layer->forward(DeviceTensor(allocator, shape, DeviceType::f32), nullptr,
                                       stash, &account);
                }),
                prefix(c) + "forward needs a target")
          << c.label;
    }
    const std::size_t kept = models::layer_layout(c.model, c.spec()).kept.size();
    EXPECT_EQ(logic_error_of([&] { (void)layer->backward(DeviceStash{}, DeviceTensor{}); }),
              prefix(c) + "backward got a stash of 0 tensors, not " + std::to_string(kept))
        << c.label;
    EXPECT_EQ(account.bytes(), 0) << c.label << ": nothing charged by a refused forward";
  }
}

// What a receiver expects before a message arrives: DiT's stages send the
// conditioning row with the T tokens, [b, T+1, H] (the first GPU run's DiT
// at K=4 failed here when it expected [b, T, H]).
TEST(MessageShapesHost, DitSendsItsConditioningRowWithTheTokens) {
  MessageTag tag;
  tag.microbatch = schedules::Microbatch{1};
  const models::Model dit = models::parse_model("dit:layers=2,hidden=8,heads=2,tokens=6,classes=5");
  EXPECT_EQ(MessageShapes(dit, {2, 3}).of(tag).shape, (std::vector<std::int64_t>{3, 7, 8}));
  const models::Model llama =
      models::parse_model("llama:layers=2,hidden=8,heads=4,kv_heads=2,ffn=12,seq=5,vocab=11");
  EXPECT_EQ(MessageShapes(llama, {2, 3}).of(tag).shape, (std::vector<std::int64_t>{3, 5, 8}));
  EXPECT_EQ(MessageShapes(models::build_mlp(1, 8), {2, 3}).of(tag).shape,
            (std::vector<std::int64_t>{3, 8}));
}

// A tied embedding's gradient, whichever end sends it: the token table's [V, H].
TEST(MessageShapesHost, ATiedGradientIsTheTokenTable) {
  const models::Model llama =
      models::parse_model("llama:layers=2,hidden=8,heads=4,kv_heads=2,ffn=12,seq=5,vocab=11,tied=1");
  MessageTag tag;
  tag.kind = MessageKind::tied_gradient;
  for (const int stage : {0, 3}) {
    tag.stage = schedules::Stage{stage};
    EXPECT_EQ(MessageShapes(llama, {2, 3}).of(tag).shape, (std::vector<std::int64_t>{11, 8})) << stage;
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
