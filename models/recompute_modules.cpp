#include "models/recompute_modules.hpp"

#include <array>
#include <utility>

namespace gpipe::models {

namespace {

using Member = bool RecomputeModules::*;
constexpr std::array<std::pair<std::string_view, Member>, 3> kModules{{
    {"core_attn", &RecomputeModules::core_attn},
    {"mlp", &RecomputeModules::mlp},
    {"layernorm", &RecomputeModules::layernorm},
}};

}  // namespace

std::optional<RecomputeModules> parse_recompute_modules(std::string_view text) {
  RecomputeModules modules;
  while (true) {
    const std::size_t plus = text.find('+');
    const std::string_view name = text.substr(0, plus);
    bool known = false;
    for (const auto& [module_name, member] : kModules) {
      if (name != module_name) continue;
      if (modules.*member) return std::nullopt;  // named twice
      modules.*member = true;
      known = true;
    }
    if (!known) return std::nullopt;
    if (plus == std::string_view::npos) return modules;
    text = text.substr(plus + 1);
  }
}

std::string to_string(const RecomputeModules& modules) {
  std::string out;
  for (const auto& [name, member] : kModules) {
    if (!(modules.*member)) continue;
    if (!out.empty()) out += '+';
    out += name;
  }
  return out;
}

double recomputed_flops(const RecomputeModules& modules, double attention_forward_flops,
                        double mlp_forward_flops) {
  return (modules.core_attn ? attention_forward_flops : 0.0) + (modules.mlp ? mlp_forward_flops : 0.0);
}

std::string_view recompute_module_names() { return "core_attn, mlp, layernorm"; }

int to_bits(const RecomputeModules& modules) {
  int bits = 0;
  for (std::size_t i = 0; i < kModules.size(); ++i) {
    if (modules.*kModules[i].second) bits |= 1 << i;
  }
  return bits;
}

RecomputeModules from_bits(int bits) {
  RecomputeModules modules;
  for (std::size_t i = 0; i < kModules.size(); ++i) modules.*kModules[i].second = (bits >> i & 1) != 0;
  return modules;
}

}  // namespace gpipe::models
