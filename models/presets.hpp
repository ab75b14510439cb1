// Named model shapes people train, each a family spec with its published
// size, so `--model llama3-8b` needs no numbers and a preset's counts can be
// checked against what its authors publish (tests/models/presets_test.cpp).
// A preset takes overrides: `llama3-8b:seq=4096`.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpipe::models {

struct Preset {
  std::string_view name;         // "llama3-8b"
  std::string_view spec;         // the family spec it stands for
  std::int64_t published_params;  // the authors' count of parameters
  // The authors' forward cost per sample in multiply-adds (DiT's "Gflops"
  // count one multiply-add as one), where they give one; 0 where not.
  double published_forward_macs;
  std::string_view source;       // where both numbers are published
};

[[nodiscard]] std::span<const Preset> presets();
[[nodiscard]] const Preset* find_preset(std::string_view name);
// "llama3-8b, llama3-70b, ...", for help texts and errors.
[[nodiscard]] std::string preset_names();

}  // namespace gpipe::models
