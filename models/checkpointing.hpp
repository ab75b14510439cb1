// Megatron-LM's full recompute (`--recompute-granularity full`): per-layer
// activation checkpointing inside each stage. Where GPipe's re-materialization
// (RecomputePolicy::stage) keeps a stage's input and rebuilds the whole
// stage before its backward, Megatron keeps the input of each checkpointed
// chunk of transformer layers and, in the backward, rebuilds one chunk at a
// time from its input, runs the chunk's backward, and frees it before the next.
//
//   uniform, N: the stage's blocks in chunks of N consecutive ones (the last
//     may be shorter), every chunk checkpointed (Megatron's
//     `--recompute-method uniform --recompute-num-layers N`);
//   block, N: the first N blocks of the stage checkpointed one by one, the
//     rest kept whole (`--recompute-method block`).
//
// Only blocks (transformer, llama, dit and mlp blocks) are checkpointed: as in
// Megatron, the embedding and the head sit outside the checkpointed stack.
// The simulator's costs (profiles/stage_costs.hpp) and the executor's stage
// (exec/runtime/stage.hpp) both cut a stage into these units, here, so what
// one predicts the other runs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::models {

enum class CheckpointMethod { uniform, block };

[[nodiscard]] std::string_view to_string(CheckpointMethod method);
[[nodiscard]] std::optional<CheckpointMethod> parse_checkpoint_method(std::string_view text);
// The names parse_checkpoint_method() accepts, in enum order, for flag checks.
[[nodiscard]] std::vector<std::string> checkpoint_method_names();

struct Checkpointing {
  CheckpointMethod method = CheckpointMethod::uniform;
  int num_layers = 1;  // N >= 1

  bool operator==(const Checkpointing&) const = default;
};

// "uniform, 1 block a checkpoint", "block, the first 2 blocks of each stage": for reports.
[[nodiscard]] std::string describe(const Checkpointing& checkpointing);

// Whether a layer of this kind (models::layer_kind) is one Megatron's full
// recompute checkpoints: a block.
[[nodiscard]] bool is_checkpointed_kind(std::string_view kind);

// Consecutive layers [first, end) of a stage, given as indices into the
// stage's own layers: kept whole (checkpointed false) or, checkpointed, kept
// as the first layer's input alone and rebuilt in the backward.
struct CheckpointUnit {
  int first = 0;
  int end = 0;
  bool checkpointed = false;

  bool operator==(const CheckpointUnit&) const = default;
};

// The stage's layers, of these kinds in order, cut into units under
// `checkpointing` (every layer of a unit of its own when nullopt, none
// checkpointed). Throws InputError for N < 1.
[[nodiscard]] std::vector<CheckpointUnit> checkpoint_units(std::span<const std::string> kinds,
                                                           const std::optional<Checkpointing>& checkpointing);

// What a stage holds for one micro-batch, in bytes, given each layer's
// activation bytes A_l and input bytes In_l (In_l <= A_l, part of it):
//   kept: what it holds between F and B, sum over units of A_u (whole) or
//     In_u (checkpointed: the unit's first layer's input);
//   transient: how much more it holds at its worst while F or B runs, the
//     units before u kept and unit u whole: max_u (sum_{v<u} kept_v + A_u) - kept
//     (0 without checkpointing).
struct CheckpointedBytes {
  std::int64_t kept = 0;
  std::int64_t transient = 0;

  bool operator==(const CheckpointedBytes&) const = default;
};
[[nodiscard]] CheckpointedBytes checkpointed_bytes(std::span<const CheckpointUnit> units,
                                                   std::span<const std::int64_t> activation_bytes,
                                                   std::span<const std::int64_t> input_bytes);

}  // namespace gpipe::models
