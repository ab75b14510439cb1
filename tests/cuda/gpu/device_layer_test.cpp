// The CUDA layers (exec/cuda/layers/layer.hpp) against the CPU layers made from the
// same model, index and seed, every case of tests/exec/cpu_layer_cases.hpp (each
// kind of GPT, Llama and DiT, the blocks with naive and flash attention):
// the uploaded weights equal the CPU's; the forward
// output, every stash tensor, the input gradient and every parameter gradient
// match within the stated tolerance, over two backwards (gradients
// accumulate); the stash holds exactly the CPU's tensors and is charged the
// bytes models::bytes_at() predicts, refunded to 0 by the backward. Prints
// max abs and rel error per tensor. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/cuda/layers/blas.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/layers/memory_account.hpp"
#include "models/model.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cuda {
namespace {

using cpu::cases::LayerCase;

constexpr std::uint64_t kSeed = 7;
constexpr std::int64_t kBatch = 3;
// fp32, summation orders differing from OpenBLAS's and the CPU loops': 1e-5
// relative per element, and 1e-5 of the tensor's largest magnitude (at least
// 1) absolute, for elements that are sums with cancellation. The flash cases
// get no more: at these sizes (S <= 6) both backends' flash kernels see one
// key tile, so their online softmax is the plain one on either side; the
// exponentials (the CPU's polynomial, the device's expf) differ by an ulp or two.
constexpr double kRelative = 1e-5;

std::vector<float> host_values(const Tensor& t) { return {t.f32().begin(), t.f32().end()}; }

void expect_matches(const std::string& name, const DeviceTensor& got, const Tensor& want,
                    const Stream& stream) {
  ASSERT_FALSE(got.empty()) << name;
  ASSERT_EQ(got.shape(), want.shape()) << name;
  ASSERT_EQ(got.bytes(), want.bytes()) << name;
  const Tensor host = got.to_host(stream);
  if (want.type() == ElementType::i32) {
    ASSERT_EQ(host.type(), ElementType::i32) << name;
    EXPECT_TRUE(std::ranges::equal(host.i32(), want.i32())) << name << ": ids differ";
    return;
  }
  const std::vector<float> reference = host_values(want);
  double scale = 1.0;
  for (const float v : reference) scale = std::max(scale, static_cast<double>(std::abs(v)));
  test::expect_close(name, host_values(host), reference, {kRelative * scale, kRelative});
}

Tensor grad_output_for(const LayerCase& c, std::int64_t b, std::mt19937& rng) {
  if (!c.is_loss()) return cpu::cases::random_normal(cpu::cases::output_shape(c, b), rng);
  // A mean over a mini-batch of 2b samples, as the executor hands it down.
  Tensor g({b});
  for (float& v : g.f32()) v = 1.0F / static_cast<float>(2 * b);
  return g;
}

class DeviceLayerTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(DeviceLayerTest, MatchesTheCpuLayer) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const LayerCase& c = GetParam();
  CudaDeviceMemory memory(0);
  CachingAllocator allocator(memory);
  Stream stream(0);
  const layers::OwnedBlasHandle blas = layers::make_blas_handle();
  const LayerContext context{&allocator, blas.get(), &stream};

  const std::unique_ptr<cpu::Layer> host = cpu::make_layer(c.model, c.index, kSeed);
  std::unique_ptr<DeviceLayer> device = make_device_layer(c.model, c.index, kSeed, context);
  ASSERT_EQ(device->spec(), host->spec());
  ASSERT_EQ(device->parameters().size(), host->parameters().size());
  for (std::size_t i = 0; i < host->parameters().size(); ++i) {
    const cpu::Parameter& want = host->parameters()[i];
    const DeviceParameter& got = device->parameters()[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_TRUE(cpu::cases::same_values(got.value.to_host(stream), want.value)) << want.name;
    EXPECT_TRUE(cpu::cases::same_values(got.grad.to_host(stream), want.grad)) << want.name;
  }

  const std::int64_t expected_stash =
      models::bytes_at(c.spec(), static_cast<int>(kBatch), models::DType::fp32).activation_bytes;
  std::mt19937 rng(11);
  for (int pass = 0; pass < 2; ++pass) {
    const std::string tag = c.label + " pass " + std::to_string(pass) + " ";
    const Tensor input = cpu::cases::random_input(c, kBatch, rng);
    const Tensor target = cpu::cases::random_target(c, kBatch, rng);
    const Tensor grad_output = grad_output_for(c, kBatch, rng);
    const DeviceType input_type =
        input.type() == ElementType::i32 ? DeviceType::i32 : DeviceType::f32;

    MemoryAccount host_account;
    cpu::Stash host_stash;
    const Tensor host_out = host->forward(input.clone(), target.empty() ? nullptr : &target,
                                          host_stash, &host_account);

    MemoryAccount account;
    DeviceStash stash;
    DeviceTensor device_target;
    if (!target.empty()) {
      device_target = DeviceTensor::from_host(
          allocator, target,
          target.type() == ElementType::i32 ? DeviceType::i32 : DeviceType::f32, stream);
    }
    const DeviceTensor out =
        device->forward(DeviceTensor::from_host(allocator, input, input_type, stream),
                        target.empty() ? nullptr : &device_target, stash, &account);
    expect_matches(tag + "output", out, host_out, stream);

    ASSERT_EQ(stash.tensors.size(), host_stash.tensors.size()) << tag;
    EXPECT_EQ(stash.tensors.size(), cpu::cases::stash_count(c)) << tag;
    for (std::size_t i = 0; i < stash.tensors.size(); ++i) {
      expect_matches(tag + "stash " + std::to_string(i), stash.tensors[i], host_stash.tensors[i],
                     stream);
      EXPECT_EQ(stash.tensors[i].account(), &account) << tag << "stash " << i;
    }
    EXPECT_EQ(stash.bytes(), expected_stash) << tag;
    EXPECT_EQ(account.bytes(), expected_stash) << tag;
    EXPECT_EQ(host_account.bytes(), expected_stash) << tag;

    const Tensor host_dx = host->backward(std::move(host_stash), grad_output);
    const DeviceTensor device_grad_output =
        DeviceTensor::from_host(allocator, grad_output, DeviceType::f32, stream);
    const DeviceTensor dx = device->backward(std::move(stash), device_grad_output);
    EXPECT_EQ(account.bytes(), 0) << tag << "the backward refunds the stash";
    if (host_dx.empty()) {
      EXPECT_TRUE(dx.empty()) << tag << "no input gradient";
    } else {
      expect_matches(tag + "input grad", dx, host_dx, stream);
    }
    for (std::size_t i = 0; i < host->parameters().size(); ++i) {
      expect_matches(tag + "grad " + host->parameters()[i].name, device->parameters()[i].grad,
                     host->parameters()[i].grad, stream);
    }
  }
  stream.synchronize();
}

// Every case the CPU layers are tested on: all kinds, naive and flash attention.
INSTANTIATE_TEST_SUITE_P(Kinds, DeviceLayerTest, ::testing::ValuesIn(cpu::cases::layer_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace gpipe::exec::cuda
