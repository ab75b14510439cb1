#include "models/checkpointing.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/model.hpp"

namespace gpipe::models {

std::string_view to_string(CheckpointMethod method) {
  switch (method) {
    case CheckpointMethod::uniform: return "uniform";
    case CheckpointMethod::block: return "block";
  }
  return "?";
}

std::optional<CheckpointMethod> parse_checkpoint_method(std::string_view text) {
  for (const CheckpointMethod m : {CheckpointMethod::uniform, CheckpointMethod::block}) {
    if (text == to_string(m)) return m;
  }
  return std::nullopt;
}

std::vector<std::string> checkpoint_method_names() { return {"uniform", "block"}; }

std::string describe(const Checkpointing& c) {
  const char* blocks = c.num_layers == 1 ? "block" : "blocks";
  if (c.method == CheckpointMethod::block) {
    return fmt::format("block, the first {} {} of each stage", c.num_layers, blocks);
  }
  return fmt::format("uniform, {} {} a checkpoint", c.num_layers, blocks);
}

bool is_checkpointed_kind(std::string_view kind) {
  return kind == layer_kind::transformer_block || kind == layer_kind::llama_block ||
         kind == layer_kind::dit_block || kind == layer_kind::mlp_block;
}

std::vector<CheckpointUnit> checkpoint_units(std::span<const std::string> kinds,
                                             const std::optional<Checkpointing>& checkpointing) {
  const int n = static_cast<int>(kinds.size());
  std::vector<CheckpointUnit> units;
  if (!checkpointing) {
    for (int l = 0; l < n; ++l) units.push_back({l, l + 1, false});
    return units;
  }
  const int per_chunk = checkpointing->num_layers;
  if (per_chunk < 1) {
    throw InputError(fmt::format("--recompute-num-layers must be at least 1 (got {})", per_chunk));
  }
  int blocks_seen = 0;  // of this stage, for block's first N
  for (int l = 0; l < n;) {
    if (!is_checkpointed_kind(kinds[static_cast<std::size_t>(l)])) {
      units.push_back({l, l + 1, false});
      ++l;
      continue;
    }
    if (checkpointing->method == CheckpointMethod::block) {
      units.push_back({l, l + 1, blocks_seen < per_chunk});
      ++blocks_seen;
      ++l;
      continue;
    }
    // uniform: up to N consecutive blocks; a layer of another kind ends the chunk.
    int end = l;
    while (end < n && end - l < per_chunk && is_checkpointed_kind(kinds[static_cast<std::size_t>(end)])) ++end;
    units.push_back({l, end, true});
    l = end;
  }
  return units;
}

CheckpointedBytes checkpointed_bytes(std::span<const CheckpointUnit> units,
                                     std::span<const std::int64_t> activation_bytes,
                                     std::span<const std::int64_t> input_bytes) {
  if (activation_bytes.size() != input_bytes.size()) {
    throw std::logic_error("checkpointed_bytes: one input size per layer");
  }
  CheckpointedBytes out;
  std::int64_t worst = 0;  // max_u (kept before u + A_u)
  for (const CheckpointUnit& u : units) {
    std::int64_t whole = 0;
    for (int l = u.first; l < u.end; ++l) whole += activation_bytes[static_cast<std::size_t>(l)];
    worst = std::max(worst, out.kept + whole);
    out.kept += u.checkpointed ? input_bytes[static_cast<std::size_t>(u.first)] : whole;
  }
  out.transient = worst - out.kept;
  return out;
}

}  // namespace gpipe::models
