// The device table (profiles/devices.json, built in): the datasheet numbers
// the analytic model relies on, the lookup by key or by full name (as a
// profile's "device" field holds it), and a user's table with one clear
// error per bad field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "profiles/device.hpp"

namespace gpipe::profiles {
namespace {

TEST(Devices, H100DatasheetNumbers) {
  const Device d = device_named("h100");
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.bf16_tflops, 989.0);
  EXPECT_EQ(d.fp32_tflops, 67.0);
  EXPECT_EQ(d.hbm_TBps, 3.35);
  EXPECT_EQ(d.link_GBps, 450.0);
  // nvidia-smi's 81,559 MiB, not the datasheet's "80 GB".
  EXPECT_EQ(d.memory_bytes, 81'559LL << 20);
  EXPECT_EQ(d.memory_bytes, 85'520'809'984);
  EXPECT_EQ(usable_device_memory(d.memory_bytes), 81'244'769'489);
}

TEST(Devices, H200HasTheH100ComputeAndMoreMemory) {
  const Device h100 = device_named("h100");
  const Device h200 = device_named("h200");
  EXPECT_EQ(h200.name, "NVIDIA H200");
  EXPECT_EQ(h200.bf16_tflops, h100.bf16_tflops);
  EXPECT_EQ(h200.fp32_tflops, h100.fp32_tflops);
  EXPECT_EQ(h200.hbm_TBps, 4.8);
  EXPECT_EQ(h200.link_GBps, 450.0);
  EXPECT_EQ(h200.memory_bytes, 143'771LL << 20);  // measured here: docs/measured/h200/gpu-check-7.log
}

TEST(Devices, A100DatasheetNumbers) {
  const Device d = device_named("a100");
  EXPECT_EQ(d.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(d.bf16_tflops, 312.0);
  EXPECT_EQ(d.fp32_tflops, 19.5);
  EXPECT_EQ(d.hbm_TBps, 2.039);
  EXPECT_EQ(d.link_GBps, 300.0);
  EXPECT_EQ(d.memory_bytes, 81'920LL << 20);
}

TEST(Devices, TheIssuesRowsEachWithASource) {
  EXPECT_EQ(device_keys(), "a100, h100, h100-pcie, h200, b200, gb200, l40s, rtx4090, mi300x, mi355x");
  for (const Device& d : known_devices()) EXPECT_GT(d.source.size(), 40U) << d.key;
  const Device b200 = device_named("b200");
  EXPECT_EQ(b200.bf16_tflops, 2250.0);
  EXPECT_EQ(b200.fp8_tflops, 4500.0);
  EXPECT_EQ(b200.memory_bytes, 180'000'000'000);
  EXPECT_EQ(b200.link_GBps, 900.0);
  EXPECT_EQ(device_named("h100").fp8_tflops, 1979.0);
  EXPECT_EQ(device_named("a100").fp8_tflops, std::nullopt);  // no fp8 on Ampere
  EXPECT_EQ(device_named("AMD Instinct MI300X").memory_bytes, 192'000'000'000);
  EXPECT_EQ(device_named("l40s").hbm_TBps, 0.864);
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
    EXPECT_STREQ(e.what(),
                 "unknown device 'v100' (known: a100, h100, h100-pcie, h200, b200, gb200, l40s, rtx4090, mi300x, "
                 "mi355x)");
  }
}

TEST(Devices, AFp32RateTheTableLacksIsRefusedByName) {
  EXPECT_EQ(device_named("mi355x").fp32_tflops, std::nullopt);
  EXPECT_DOUBLE_EQ(peak_flops(device_named("mi355x"), models::DType::bf16), 2516.6e12);
  try {
    (void)peak_flops(device_named("mi355x"), models::DType::fp32);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--dtype fp32: the device table gives mi355x no fp32 rate");
  }
}

// A user's table: the same form, and each mistake one line naming the device and the field.
std::string error_of_table(const std::string& text) {
  try {
    (void)parse_devices(text, "mine.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string row(const std::string& key, const std::string& fields) {
  return R"({"key": ")" + key + R"(", "name": "My )" + key + R"(", "source": "measured by me")" + fields + "}";
}

constexpr const char* kRates =
    R"(, "bf16_tflops": 100, "fp8_tflops": null, "fp32_tflops": 10, "memory_GB": 16, "memory_TBps": 1, "link_GBps": 25)";

TEST(Devices, AUsersTableParsesAndItsMistakesNameTheField) {
  const std::vector<Device> mine = parse_devices(R"({"devices": [)" + row("x1", kRates) + "]}", "mine.json");
  ASSERT_EQ(mine.size(), 1U);
  EXPECT_EQ(mine[0].name, "My x1");
  EXPECT_EQ(mine[0].memory_bytes, 16'000'000'000);  // no memory_MiB: the datasheet's GB
  const std::vector<Device> measured = parse_devices(
      R"({"devices": [)" + row("x1", R"(, "bf16_tflops": 100, "fp8_tflops": null, "fp32_tflops": 10, "memory_GB": 16, "memory_MiB": 15360, "memory_TBps": 1, "link_GBps": 25)") + "]}",
      "mine.json");
  EXPECT_EQ(measured[0].memory_bytes, 15'360LL << 20);
  EXPECT_EQ(mine[0].fp8_tflops, std::nullopt);
  EXPECT_EQ(device_named("MY X1", mine).key, "x1");

  EXPECT_EQ(error_of_table(R"({"devices": [)" + row("x1", kRates) + "," +
                           row("x2", R"(, "fp8_tflops": null, "fp32_tflops": 1, "memory_GB": 1, "memory_TBps": 1, "link_GBps": 1)") +
                           "]}"),
            "mine.json: device 2 (\"x2\"): missing field 'bf16_tflops'");
  EXPECT_EQ(error_of_table(R"({"devices": [)" +
                           row("x3", R"(, "bf16_tflops": -1, "fp8_tflops": null, "fp32_tflops": 1, "memory_GB": 1, "memory_TBps": 1, "link_GBps": 1)") +
                           "]}"),
            "mine.json: device 1 (\"x3\"): field 'bf16_tflops' must be a positive number");
  EXPECT_EQ(error_of_table(R"({"devices": [)" +
                           row("x4", R"(, "bf16_tflops": 1, "fp8_tflops": "fast", "fp32_tflops": 1, "memory_GB": 1, "memory_TBps": 1, "link_GBps": 1)") +
                           "]}"),
            "mine.json: device 1 (\"x4\"): field 'fp8_tflops' must be a positive number, or null for none");
  EXPECT_EQ(error_of_table(R"({"devices": [)" + row("x5", std::string(kRates) + R"(, "memory_MiB": 0)") + "]}"),
            "mine.json: device 1 (\"x5\"): field 'memory_MiB' must be a positive number");
  EXPECT_EQ(error_of_table(R"({"devices": [{"name": "no key"}]})"), "mine.json: device 1: missing field 'key'");
  EXPECT_EQ(error_of_table(R"({"devices": [)" + row("x1", kRates) + "," + row("X1", kRates) + "]}"),
            "mine.json: device 2 (\"X1\"): its key or name is another device's");
  EXPECT_EQ(error_of_table(R"({"devices": []})"),
            "mine.json: expected {\"devices\": [...]} with at least one device");
  EXPECT_EQ(error_of_table("{").rfind("mine.json: not JSON: ", 0), 0U);
}

}  // namespace
}  // namespace gpipe::profiles
