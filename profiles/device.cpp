#include "profiles/device.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "schedules/error.hpp"

namespace gpipe::profiles {
namespace {

// The SXM parts, dense rates (the datasheets print tensor-core rates "with
// sparsity"; dense is half). The names are what cudaGetDeviceProperties and
// nvidia-smi report, so a CUPTI profile of the same GPU names it the same way.
constexpr std::array kDevices = {
    // NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: BF16 tensor core
    // 1,979 TFLOPS sparse (989 dense), FP32 67 TFLOPS, 80 GB HBM3 at 3.35 TB/s,
    // NVLink 900 GB/s (both directions together, so 450 each way).
    Device{.key = "h100",
           .name = "NVIDIA H100 80GB HBM3",
           .bf16_tflops = 989.0,
           .fp32_tflops = 67.0,
           .hbm_TBps = 3.35,
           .link_GBps = 450.0,
           .memory_bytes = 80'000'000'000},
    // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: the H100's compute
    // (BF16 1,979 sparse, FP32 67), 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s.
    Device{.key = "h200",
           .name = "NVIDIA H200",
           .bf16_tflops = 989.0,
           .fp32_tflops = 67.0,
           .hbm_TBps = 4.8,
           .link_GBps = 450.0,
           .memory_bytes = 141'000'000'000},
    // NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column: BF16 tensor
    // core 312 TFLOPS (624 sparse), FP32 19.5 TFLOPS, 80 GB HBM2e at 2,039 GB/s,
    // NVLink 600 GB/s (300 each way).
    Device{.key = "a100",
           .name = "NVIDIA A100-SXM4-80GB",
           .bf16_tflops = 312.0,
           .fp32_tflops = 19.5,
           .hbm_TBps = 2.039,
           .link_GBps = 300.0,
           .memory_bytes = 80'000'000'000},
};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::span<const Device> known_devices() { return kDevices; }

std::optional<Device> find_device(std::string_view key_or_name) {
  for (const Device& device : kDevices) {
    if (equal_ignoring_case(device.key, key_or_name) ||
        equal_ignoring_case(device.name, key_or_name)) {
      return device;
    }
  }
  return std::nullopt;
}

Device device_named(std::string_view key_or_name) {
  if (auto device = find_device(key_or_name)) return *device;
  throw InputError(fmt::format("unknown device '{}' (known: {})", key_or_name, device_keys()));
}

std::string_view device_keys() { return "h100, h200, a100"; }

double peak_flops(const Device& device, models::DType dtype) {
  const double tflops = dtype == models::DType::bf16 ? device.bf16_tflops : device.fp32_tflops;
  return tflops * 1e12;
}

double hbm_bytes_per_s(const Device& device) { return device.hbm_TBps * 1e12; }

}  // namespace gpipe::profiles
