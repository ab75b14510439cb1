#include "profiles/kernel_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"

namespace gpipe::profiles {

extern const std::span<const std::string_view> kShippedKernelModels;  // shipped_kernels.cpp.in

namespace {

constexpr JsonWording kWording{};

double fraction(const JsonField& field) {
  const double v = field.positive_number();
  if (v > 1) field.fail("expected a fraction in (0, 1]");
  return v;
}

std::vector<KernelModel> parse_shipped() {
  std::vector<KernelModel> out;
  for (const std::string_view text : kShippedKernelModels) {
    out.push_back(parse_kernel_model(text, "profiles/data/kernels"));
  }
  return out;
}

double ceil_div(std::int64_t a, std::int64_t b) { return static_cast<double>((a + b - 1) / b); }

}  // namespace

std::span<const KernelModel> known_kernel_models() {
  static const std::vector<KernelModel> models = parse_shipped();
  return models;
}

KernelModel parse_kernel_model(std::string_view text, std::string_view origin) {
  const nlohmann::json doc = parse_json_text(text, origin);
  const JsonField root(doc, origin, kWording);
  root.expect_object();
  KernelModel m;
  m.device = root.member("device").non_empty_string();
  m.source = root.member("source").non_empty_string();
  m.sms = static_cast<int>(root.member("sms").integer(1, 4096));
  const JsonField gemm = root.member("gemm");
  const JsonField tiles = gemm.member("tiles");
  for (std::size_t i = 0; i < tiles.non_empty_array_size(); ++i) {
    const JsonField tile = tiles.element(i);
    m.tiles.push_back({.m = static_cast<int>(tile.member("m").integer(1, 4096)),
                       .n = static_cast<int>(tile.member("n").integer(1, 4096)),
                       .scale = fraction(tile.member("scale"))});
  }
  m.gemm_efficiency = fraction(gemm.member("efficiency"));
  m.gemm_k_half = gemm.member("k_half").non_negative_number();
  const JsonField attention = root.member("attention");
  m.attention_forward_efficiency = fraction(attention.member("forward_efficiency"));
  m.attention_backward_efficiency = fraction(attention.member("backward_efficiency"));
  m.memory_efficiency = fraction(root.member("memory_efficiency"));
  m.kernel_overhead_us = root.member("kernel_overhead_us").non_negative_number();
  return m;
}

KernelModel load_kernel_model(const std::filesystem::path& path) {
  return parse_kernel_model(read_text_file(path), path.string());
}

KernelModel kernel_model_for(const Device& device) {
  const std::span<const KernelModel> known = known_kernel_models();
  const auto of = [&](std::string_view key) {
    return std::find_if(known.begin(), known.end(), [&](const KernelModel& m) { return m.device == key; });
  };
  if (const auto it = of(device.key); it != known.end()) return *it;
  const auto h100 = of("h100");
  if (h100 == known.end()) throw InternalError("profiles/data/kernels holds no h100 table");
  KernelModel m = *h100;
  m.device = device.key;
  m.source = fmt::format("no kernel table for {}: the H100's ({}) stands in", device.key, h100->source);
  return m;
}

double gemm_efficiency(const KernelModel& model, std::int64_t m, std::int64_t n, std::int64_t k,
                       std::int64_t batch) {
  if (m < 1 || n < 1 || k < 1 || batch < 1) return model.gemm_efficiency;
  double best = 0;
  for (const GemmTile& tile : model.tiles) {
    const double tiles = ceil_div(m, tile.m) * ceil_div(n, tile.n) * static_cast<double>(batch);
    const double waves = std::ceil(tiles / model.sms);
    best = std::max(best, tile.scale * tiles / (waves * model.sms));
  }
  const double kd = static_cast<double>(k);
  return model.gemm_efficiency * best * kd / (kd + model.gemm_k_half);
}

double kernel_us(const models::Kernel& kernel, const KernelModel& model, const Device& device,
                 models::DType dtype) {
  const double peak = peak_flops(device, dtype);
  const double bandwidth = hbm_bytes_per_s(device) * model.memory_efficiency;
  double seconds = 0;
  switch (kernel.kind) {
    case models::KernelKind::gemm:
      seconds = std::max(kernel.flops / (peak * gemm_efficiency(model, kernel.m, kernel.n, kernel.k, kernel.batch)),
                         kernel.bytes / bandwidth);
      break;
    case models::KernelKind::attention: {
      const double efficiency = kernel.pass == models::KernelPass::forward ? model.attention_forward_efficiency
                                                                           : model.attention_backward_efficiency;
      seconds = std::max(kernel.flops / (peak * efficiency), kernel.bytes / bandwidth);
      break;
    }
    case models::KernelKind::memory: seconds = kernel.bytes / bandwidth; break;
    case models::KernelKind::roofline:
      seconds = std::max(kernel.flops / (peak * model.gemm_efficiency), kernel.bytes / bandwidth);
      break;
  }
  return seconds * 1e6 + model.kernel_overhead_us;
}

}  // namespace gpipe::profiles
