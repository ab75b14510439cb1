// Named accelerators and their public peak rates, for the analytic cost model
// (profiles/analytic.hpp) and as the default memory limit of a sweep. The
// table is profiles/devices.json, built into the tools: per device its
// datasheet figures (dense, i.e. without 2:4 sparsity) and the source of
// each row. `--device-file F` adds a user's own, in the same form.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.hpp"

namespace gpipe::profiles {

struct Device {
  std::string key;   // what --device takes: "h100"
  std::string name;  // what the device reports, as a profile's "device" field: "NVIDIA H100 80GB HBM3"
  double bf16_tflops = 0;                  // dense bf16 tensor-core peak, 1e12 FLOP/s
  std::optional<double> fp8_tflops;        // dense fp8 tensor-core peak; none where the device has no fp8
  std::optional<double> fp32_tflops;       // fp32 peak without tensor cores (no TF32); none where unknown
  double hbm_TBps = 0;                     // memory bandwidth, 1e12 bytes/s
  double link_GBps = 0;                    // intra-node link to one peer, one direction, 1e9 bytes/s
  // Memory capacity: the total the driver reports (devices.json's memory_MiB,
  // nvidia-smi's figure) where the table gives it, else the datasheet's GB
  // (1e9 bytes), which for NVIDIA's parts undercounts: "80 GB" is 80 GiB less
  // what the driver keeps.
  std::int64_t memory_bytes = 0;
  std::string source;                      // where the figures come from

  bool operator==(const Device&) const = default;
};

// What `--memory-limit device` leaves a rank of a device's capacity: 5 % is
// held back for what no profile counts (the CUDA context, NCCL's buffers,
// the caching allocator's fragmentation), so an H100 (81,559 MiB) gives 81.24 GB.
inline constexpr int kDeviceMemoryReservePercent = 5;
[[nodiscard]] constexpr std::int64_t usable_device_memory(std::int64_t capacity_bytes) {
  return capacity_bytes - capacity_bytes / 100 * kDeviceMemoryReservePercent;
}

// The shipped table (profiles/devices.json), in its order.
[[nodiscard]] std::span<const Device> known_devices();

// A table in devices.json's form, from text; `origin` names it in errors.
// Throws InputError naming the device and the field: "ORIGIN: device 2
// ("x"): missing field 'bf16_tflops'", a value out of range, a key twice.
[[nodiscard]] std::vector<Device> parse_devices(std::string_view json, std::string_view origin);
// The same from a file (--device-file): "--device-file F: ..." in errors.
[[nodiscard]] std::vector<Device> load_device_file(const std::filesystem::path& path);

// The device of `table` whose key ("h100") or full name ("NVIDIA H100 80GB
// HBM3") is `key_or_name`, case-insensitively; nullopt when none is.
[[nodiscard]] std::optional<Device> find_device(std::string_view key_or_name,
                                                std::span<const Device> table = known_devices());

// As find_device(), but throws InputError "unknown device 'x' (known: a100, h100, ...)".
[[nodiscard]] Device device_named(std::string_view key_or_name, std::span<const Device> table = known_devices());

// The keys of a table, "a100, h100, ...", for help texts and errors.
[[nodiscard]] std::string device_keys(std::span<const Device> table = known_devices());

// The peak arithmetic rate in FLOP/s for `dtype`: bf16 on tensor cores, fp32
// without. Throws InputError where the table gives none.
[[nodiscard]] double peak_flops(const Device& device, models::DType dtype);

// Memory bandwidth in bytes/s.
[[nodiscard]] double hbm_bytes_per_s(const Device& device);

}  // namespace gpipe::profiles
