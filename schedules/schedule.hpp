// A pipeline schedule: one ordered action list per rank, the stage -> rank
// map and the recompute policy. Generators fill in compute actions; lowering
// adds R, the comm actions and STEP (see lower.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/action.hpp"

namespace gpipe::schedules {

// never: every stage keeps what its forward made until its backward.
// stage: GPipe's re-materialization, stage-wide: a stage keeps its input
//   alone, and R rebuilds the whole stage before its backward.
// stage_except_last: stage, but for a micro-batch whose B follows its F at once.
// full: Megatron-LM's per-layer checkpoints (models/checkpointing.hpp): no R
//   action; each B rebuilds its stage's checkpointed chunks one at a time.
enum class RecomputePolicy { never, stage, stage_except_last, full };

// An overlapped forward and backward, torch's `(0F3;3B1)OVERLAP_F_B`
// (DualPipeV): the two stand next to each other in their rank's list, forward
// first, before and after lowering (lowering puts R and comm actions around
// the pair). overlap.hpp reads and writes the composite; docs/design.md says how
// the pair runs.
struct OverlapPair {
  Action forward;
  Action backward;  // B, or I

  auto operator<=>(const OverlapPair&) const = default;
};

[[nodiscard]] std::string_view to_string(RecomputePolicy policy);
// A policy's name, or its name of before (always for stage, except_last for
// stage_except_last), which files and scripts written then still use.
[[nodiscard]] std::optional<RecomputePolicy> parse_recompute_policy(std::string_view text);
// The policies' names, in enum order: what help texts and errors list.
[[nodiscard]] std::vector<std::string> recompute_policy_names();
// Those and the names of before: what a flag check lets through.
[[nodiscard]] std::vector<std::string> accepted_recompute_policy_names();

struct Schedule {
  std::string name;
  int num_ranks = 0;
  int num_stages = 0;
  int num_microbatches = 0;
  std::vector<Rank> stage_to_rank;  // indexed by stage
  RecomputePolicy recompute = RecomputePolicy::never;
  std::vector<std::vector<Action>> ranks;  // indexed by rank, in program order
  std::vector<OverlapPair> overlapped;     // empty unless the schedule overlaps F&B pairs
  // The first and the last stage share a matrix (a tied embedding): lowering
  // exchanges its gradient before their STEPs (schedules/tied_gradient.hpp).
  bool tied_embedding = false;
  // Data parallelism: D replicas of the pipeline, each stage's gradients
  // reduced over its group of D before its STEP (schedules/gradient_reduction.hpp).
  int data_parallel = 1;
  // Where lowering starts the reductions: false, each stage's right after
  // its last backward (torch's runtime: a rank's earlier stages reduce
  // under its later ones' backwards); true, every stage's of a rank after
  // the rank's last backward (Megatron-LM without --overlap-grad-reduce).
  bool reduce_after_backward = false;

  [[nodiscard]] Rank rank_of(Stage stage) const { return stage_to_rank.at(stage.at()); }
  [[nodiscard]] const std::vector<Action>& actions(Rank rank) const { return ranks.at(rank.at()); }
  // True once lowering ran: the schedule holds R, comm or STEP actions.
  [[nodiscard]] bool is_lowered() const;
  // Whether stages s and s+1 sit on different ranks, so data between them travels.
  [[nodiscard]] bool crosses_ranks(Stage s) const;
  [[nodiscard]] int total_actions() const;

  bool operator==(const Schedule&) const = default;
};

// One stage per rank, stage s on rank s: the layout of GPipe and 1F1B.
[[nodiscard]] std::vector<Rank> one_stage_per_rank(int num_stages);

// Where an action sits in a schedule: its rank and its position in that rank's list.
struct Position {
  Rank rank;
  int step = 0;
};

}  // namespace gpipe::schedules
