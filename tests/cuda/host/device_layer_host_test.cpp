// The host-side logic of the CUDA layers, without a GPU: make_device_layer's
// input errors (bad index, a kind the backend lacks) and its refusal of an
// incomplete LayerContext, all raised before anything touches a device; the
// kinds' check of the parameters and the context they are handed; the
// argument checks' exact messages; and DeviceStash::bytes. Device tensors here live in
// FakeDeviceMemory and are never read or written (that would need a GPU).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/layers/layer_kinds.hpp"
#include "models/families.hpp"
#include "tests/cuda/host/fake_layer_context.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec::cuda {
namespace {

using gpipe::testing::error_of;

using gpipe::testing::logic_error_of;
using test::UnusedHandles;

// The mlp_block's parameters in `names` order, shaped as the CPU layer's (H 8, F 32).
layers::Parameters mlp_parameters(CachingAllocator& allocator,
                                  const std::vector<std::string>& names) {
  const std::vector<std::vector<std::int64_t>> shapes{{8}, {8}, {32, 8}, {32}, {8, 32}, {8}};
  layers::Parameters parameters;
  for (std::size_t i = 0; i < names.size(); ++i) {
    DeviceParameter& p = parameters.emplace_back();
    p.name = names[i];
    p.value = DeviceTensor(allocator, shapes[i % shapes.size()], DeviceType::f32);
    p.grad = DeviceTensor(allocator, shapes[i % shapes.size()], DeviceType::f32);
  }
  return parameters;
}

TEST(DeviceLayerHost, MakeDeviceLayerRejectsABadIndexBeforeAnyDeviceWork) {
  const models::Model mlp = models::build_mlp(1, 8);
  EXPECT_EQ(error_of([&] { (void)make_device_layer(mlp, 5, 1, LayerContext{}); }),
            "make_layer: layer index 5 is outside model " + mlp.spec + " (2 layers)");
}

TEST(DeviceLayerHost, MakeDeviceLayerRejectsAKindTheBackendLacks) {
  models::Model mlp = models::build_mlp(1, 8);
  mlp.layers[0].kind = "conv";
  EXPECT_EQ(error_of([&] { (void)make_device_layer(mlp, 0, 1, LayerContext{}); }),
            "make_layer: layer block0 has kind 'conv', which the CPU backend lacks");
}

TEST(DeviceLayerHost, MakeDeviceLayerNeedsAWholeContext) {
  const models::Model mlp = models::build_mlp(1, 8);
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  EXPECT_EQ(logic_error_of([&] { (void)make_device_layer(mlp, 0, 1, LayerContext{}); }),
            "layer block0 (mlp_block): the layer context has no allocator");
  EXPECT_EQ(logic_error_of([&] {
              (void)make_device_layer(mlp, 0, 1, LayerContext{&allocator, nullptr, nullptr});
            }),
            "layer block0 (mlp_block): the layer context has no BLAS handle");
  EXPECT_EQ(allocator.stats().allocations, 0) << "nothing allocated before the check";
}

TEST(DeviceLayerHost, KindsCheckTheParametersTheyAreHanded) {
  const models::Model mlp = models::build_mlp(1, 8);
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  UnusedHandles handles;
  const LayerContext context = handles.context(allocator);
  const std::vector<std::string> names{"ln.gamma", "ln.beta", "w1", "c1", "w2", "c2"};
  EXPECT_NO_THROW(
      (void)layers::make_mlp_block(mlp, mlp.layers[0], mlp_parameters(allocator, names), context));
  std::vector<std::string> swapped = names;
  std::swap(swapped[2], swapped[4]);
  EXPECT_EQ(logic_error_of([&] {
              (void)layers::make_mlp_block(mlp, mlp.layers[0], mlp_parameters(allocator, swapped),
                                           context);
            }),
            "layer block0 (mlp_block): the device parameters are not the CPU layer's 6 f32 "
            "parameters in order");
  EXPECT_NE(logic_error_of([&] {
              (void)layers::make_mse_loss(mlp, mlp.layers[1], mlp_parameters(allocator, {"w"}),
                                          context);
            }),
            "no error");
  EXPECT_EQ(allocator.stats().live_allocations, 0) << "every parameter freed";
}

// A layer runs in the context it is made for: a kind refuses an incomplete one
// when it is made, before it could enqueue anything.
TEST(DeviceLayerHost, KindsRefuseAnIncompleteContext) {
  const models::Model mlp = models::build_mlp(1, 8);
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  const std::vector<std::string> names{"ln.gamma", "ln.beta", "w1", "c1", "w2", "c2"};
  EXPECT_EQ(logic_error_of([&] {
              (void)layers::make_mlp_block(mlp, mlp.layers[0], mlp_parameters(allocator, names),
                                           LayerContext{&allocator, nullptr, nullptr});
            }),
            "layer block0 (mlp_block): the layer context has no BLAS handle");
  EXPECT_EQ(logic_error_of([&] {
              (void)layers::make_mlp_block(mlp, mlp.layers[0], mlp_parameters(allocator, names),
                                           LayerContext{});
            }),
            "layer block0 (mlp_block): the layer context has no allocator");
}

TEST(DeviceLayerHost, ArgumentChecksNameTheLayerAndTheTensor) {
  const models::Model mlp = models::build_mlp(1, 8);
  const models::Layer& block = mlp.layers[0];
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  const DeviceTensor good(allocator, {3, 8}, DeviceType::f32);
  EXPECT_EQ(exec::expect_tensor(block, "input", good, DeviceType::f32, {exec::kAnyBatch, 8}),
            3);
  const DeviceTensor wrong(allocator, {3, 5}, DeviceType::f32);
  EXPECT_EQ(error_of([&] {
              exec::expect_tensor(block, "input", wrong, DeviceType::f32,
                                    {exec::kAnyBatch, 8});
            }),
            "layer block0 (mlp_block): input is " + wrong.describe() + ", expected f32[b,8]");
  EXPECT_EQ(error_of([&] {
              exec::expect_tensor(block, "target", good, DeviceType::i32, {3, 8});
            }),
            "layer block0 (mlp_block): target is " + good.describe() + ", expected i32[3,8]");
  EXPECT_EQ(error_of([&] {
              exec::expect_tensor(block, "input", DeviceTensor{}, DeviceType::f32, {3, 8});
            }),
            "layer block0 (mlp_block): input is empty, expected f32[3,8]");
  EXPECT_EQ(error_of([&] { (void)exec::expect_target<DeviceTensor>(mlp.layers[1], nullptr); }),
            "layer loss (mse_loss): forward needs a target");
  EXPECT_EQ(logic_error_of([&] { exec::expect_stash(block, DeviceStash{}, 5); }),
            "layer block0 (mlp_block): backward got a stash of 0 tensors, not 5");
}

TEST(DeviceLayerHost, StashBytesAreTheExactBytesOfItsTensors) {
  FakeDeviceMemory memory;
  CachingAllocator allocator(memory);
  MemoryAccount account;
  DeviceStash stash;
  stash.tensors.emplace_back(allocator, std::vector<std::int64_t>{3, 7}, DeviceType::f32, &account);
  stash.tensors.emplace_back(allocator, std::vector<std::int64_t>{3, 4}, DeviceType::i32, &account);
  EXPECT_EQ(stash.bytes(), 3 * 7 * 4 + 3 * 4 * 4);
  EXPECT_EQ(account.bytes(), stash.bytes());
  stash.tensors.clear();
  EXPECT_EQ(account.bytes(), 0);
}

}  // namespace
}  // namespace gpipe::exec::cuda
