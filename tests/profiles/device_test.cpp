// The device table: the datasheet numbers the analytic model relies on, and
// the lookup by key or by full name (as a profile's "device" field holds it).
#include <gtest/gtest.h>

#include <string>

#include "profiles/device.hpp"
#include "schedules/error.hpp"

namespace gpipe::profiles {
namespace {

TEST(Devices, H100DatasheetNumbers) {
  const Device d = device_named("h100");
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.bf16_tflops, 989.0);
  EXPECT_EQ(d.fp32_tflops, 67.0);
  EXPECT_EQ(d.hbm_TBps, 3.35);
  EXPECT_EQ(d.link_GBps, 450.0);
  EXPECT_EQ(d.memory_bytes, 80'000'000'000);
}

TEST(Devices, H200HasTheH100ComputeAndMoreMemory) {
  const Device h100 = device_named("h100");
  const Device h200 = device_named("h200");
  EXPECT_EQ(h200.name, "NVIDIA H200");
  EXPECT_EQ(h200.bf16_tflops, h100.bf16_tflops);
  EXPECT_EQ(h200.fp32_tflops, h100.fp32_tflops);
  EXPECT_EQ(h200.hbm_TBps, 4.8);
  EXPECT_EQ(h200.link_GBps, 450.0);
  EXPECT_EQ(h200.memory_bytes, 141'000'000'000);
}

TEST(Devices, A100DatasheetNumbers) {
  const Device d = device_named("a100");
  EXPECT_EQ(d.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(d.bf16_tflops, 312.0);
  EXPECT_EQ(d.fp32_tflops, 19.5);
  EXPECT_EQ(d.hbm_TBps, 2.039);
  EXPECT_EQ(d.link_GBps, 300.0);
  EXPECT_EQ(d.memory_bytes, 80'000'000'000);
}

TEST(Devices, RatesInSiUnits) {
  const Device d = device_named("h100");
  EXPECT_DOUBLE_EQ(peak_flops(d, models::DType::bf16), 989e12);
  EXPECT_DOUBLE_EQ(peak_flops(d, models::DType::fp32), 67e12);
  EXPECT_DOUBLE_EQ(hbm_bytes_per_s(d), 3.35e12);
}

TEST(Devices, FoundByKeyOrFullNameIgnoringCase) {
  EXPECT_EQ(find_device("H100"), find_device("h100"));
  EXPECT_EQ(find_device("NVIDIA H100 80GB HBM3")->key, "h100");
  EXPECT_EQ(find_device("nvidia h200")->key, "h200");
  EXPECT_EQ(find_device("nvidia-a100"), std::nullopt);
  EXPECT_EQ(find_device(""), std::nullopt);
  EXPECT_EQ(find_device("h10"), std::nullopt);
}

TEST(Devices, KeysListEveryDeviceInOrder) {
  std::string keys;
  for (const Device& d : known_devices()) keys += (keys.empty() ? "" : ", ") + std::string(d.key);
  EXPECT_EQ(keys, "h100, h200, a100");
  EXPECT_EQ(device_keys(), keys);
  for (const Device& d : known_devices()) {
    EXPECT_EQ(device_named(d.key), d);
    EXPECT_EQ(device_named(d.name), d);
    EXPECT_GT(d.memory_bytes, 0);
  }
}

TEST(Devices, UnknownDeviceNamesItAndListsTheKnownOnes) {
  try {
    (void)device_named("v100");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown device 'v100' (known: h100, h200, a100)");
  }
}

}  // namespace
}  // namespace gpipe::profiles
