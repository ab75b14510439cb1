// A device's kernel model: how fast each kernel of models/layer_kernels.hpp
// runs on it, for the analytic profile (profiles/analytic.hpp). A table a
// device, from profiles/data/kernels/<key>.json (built into the tools), each
// naming its source: fitted (scripts/fit-kernels, on the published runs an
// issue names, docs/published.md) or, when a GPU has measured it, measured.
//
// A GEMM of batch x (m x n x k) on a device of `sms` SMs runs in output tiles:
// for each tile shape (tm x tn) of the table, the tiles ceil(m/tm) ceil(n/tn)
// batch fill waves of `sms`, the last one partly (wave quantization):
//   waves(tile)    = ceil(tiles / sms)
//   occupancy      = tiles / (waves sms)
// cuBLAS picks the tile that does best, and each tile's main loop over k has a
// fixed cost (prologue, epilogue) worth k_half of k:
//   efficiency     = gemm_efficiency * max over tiles of (tile scale * occupancy) * k / (k + k_half)
//   time           = max(flops / (peak efficiency), bytes / (hbm memory_efficiency))
// A fused attention kernel runs at attention_forward_efficiency (or _backward)
// of the peak, a memory-bound kernel at memory_efficiency of the HBM's
// bandwidth, a roofline kernel (a kind without a decomposition) at the larger
// of its FLOPs at gemm_efficiency and its bytes. Each kernel adds
// kernel_overhead_us (the gap between two kernels on one stream).
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/layer_kernels.hpp"
#include "models/model.hpp"
#include "profiles/device.hpp"

namespace gpipe::profiles {

struct GemmTile {
  int m = 128;
  int n = 128;
  double scale = 1.0;  // its main loop's speed against the table's best tile, in (0, 1]
  bool operator==(const GemmTile&) const = default;
};

struct KernelModel {
  std::string device;  // the devices.json key it is for
  std::string source;  // how its numbers were found
  int sms = 1;
  std::vector<GemmTile> tiles;
  double gemm_efficiency = 1;  // of the dense peak, a full wave of large k
  double gemm_k_half = 0;
  double attention_forward_efficiency = 1;
  double attention_backward_efficiency = 1;
  double memory_efficiency = 1;  // of the HBM bandwidth
  double kernel_overhead_us = 0;
  bool operator==(const KernelModel&) const = default;
};

// The shipped tables (profiles/data/kernels/), by device key.
[[nodiscard]] std::span<const KernelModel> known_kernel_models();

// A table from its JSON text; `origin` names it in errors. InputError, one
// line naming the field: missing, of the wrong type, out of range.
[[nodiscard]] KernelModel parse_kernel_model(std::string_view json, std::string_view origin);
[[nodiscard]] KernelModel load_kernel_model(const std::filesystem::path& path);

// The shipped table of `device` (by key). A device without one gets the
// H100's, its source saying so: an assumption until someone measures or
// fits the device.
[[nodiscard]] KernelModel kernel_model_for(const Device& device);

// The GEMM model's efficiency (of the peak) for batch x (m x n x k).
[[nodiscard]] double gemm_efficiency(const KernelModel& model, std::int64_t m, std::int64_t n, std::int64_t k,
                                     std::int64_t batch = 1);

// One kernel's time in microseconds, kernel_overhead_us included.
[[nodiscard]] double kernel_us(const models::Kernel& kernel, const KernelModel& model, const Device& device,
                               models::DType dtype);

}  // namespace gpipe::profiles
