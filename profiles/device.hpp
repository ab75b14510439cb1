// Named accelerators and their public peak rates, for the analytic cost model
// (profiles/analytic.hpp) and as the default memory limit of a sweep. The
// numbers are NVIDIA's datasheet figures (dense, i.e. without 2:4 sparsity);
// device.cpp names the datasheet of each.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "models/model.hpp"

namespace gpipe::profiles {

struct Device {
  std::string_view key;  // what --device takes: "h100"
  std::string_view
      name;  // the CUDA device name, as a profile's "device" field: "NVIDIA H100 80GB HBM3"
  double bf16_tflops = 0;         // dense bf16 tensor-core peak, 1e12 FLOP/s
  double fp32_tflops = 0;         // fp32 peak without tensor cores (no TF32), 1e12 FLOP/s
  double hbm_TBps = 0;            // memory bandwidth, 1e12 bytes/s
  double link_GBps = 0;           // NVLink bandwidth per direction to one peer, 1e9 bytes/s
  std::int64_t memory_bytes = 0;  // HBM capacity as the datasheet gives it (GB = 1e9 bytes)

  bool operator==(const Device&) const = default;
};

// Every known device, in a fixed order (h100, h200, a100).
[[nodiscard]] std::span<const Device> known_devices();

// The device whose key ("h100") or full name ("NVIDIA H100 80GB HBM3") is
// `key_or_name`, case-insensitively; nullopt when none is.
[[nodiscard]] std::optional<Device> find_device(std::string_view key_or_name);

// As find_device(), but throws InputError "unknown device 'x' (known: h100, h200, a100)".
[[nodiscard]] Device device_named(std::string_view key_or_name);

// The keys of known_devices(), "h100, h200, a100", for help texts and errors.
[[nodiscard]] std::string_view device_keys();

// The peak arithmetic rate in FLOP/s for `dtype`: bf16 on tensor cores, fp32 without.
[[nodiscard]] double peak_flops(const Device& device, models::DType dtype);

// HBM bandwidth in bytes/s.
[[nodiscard]] double hbm_bytes_per_s(const Device& device);

}  // namespace gpipe::profiles
