// ZeRO stage 1 in the executor (Rajbhandari et al., arXiv 1910.02054;
// docs/design.md "Data parallelism"): each of a stage's D replicas keeps the
// optimizer state of a 1/D share of the stage's values and updates only
// those. Its data-parallel reduction is then a reduce-scatter (each replica
// gets the sums of its share) instead of an all-reduce, and its STEP ends
// with an all-gather of the updated weights, as sim/data_parallel.hpp prices
// them.
//
// The shares follow the reduction's pieces (reduction_pieces.hpp), so that
// each piece is one reduce-scatter in place: a piece is cut into D runs, in
// replica order, and replica d's run holds as many values as a round-robin
// deal of the stage's values (value p to replica p mod D) would give it from
// that piece. Over the stage, replica d then holds floor(P / D) values, one
// more for d < P mod D: replica 0 holds ceil(P / D), the share
// models::static_bytes counts, to the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "exec/runtime/reduction_pieces.hpp"

namespace gpipe::exec {

struct ShardedPiece {
  ReductionPiece piece;
  std::vector<int> counts;         // values of each replica's run, in replica order (sum: piece.count)
  std::vector<int> displacements;  // where each run starts, from piece.first
};

// The stage's pieces (tensors of `sizes` values, in pieces of at most
// `bucket_elements`), each cut for `replicas` replicas. std::invalid_argument
// for replicas < 1 (and as reduction_pieces for the bucket).
[[nodiscard]] inline std::vector<ShardedPiece> sharded_pieces(std::span<const std::int64_t> sizes,
                                                              std::int64_t bucket_elements, int replicas) {
  if (replicas < 1) throw std::invalid_argument("a stage has at least one replica");
  std::vector<ShardedPiece> out;
  std::int64_t dealt = 0;  // values of the stage before this piece
  for (const ReductionPiece& piece : reduction_pieces(sizes, bucket_elements)) {
    ShardedPiece& sp = out.emplace_back(ShardedPiece{piece, {}, {}});
    const std::int64_t first_replica = dealt % replicas;  // who the deal gives this piece's first value
    int at = 0;
    for (int d = 0; d < replicas; ++d) {
      // Replica d's values among the piece's: one per full round, and one
      // more where the last, partial round reaches it.
      const std::int64_t turn = (d - first_replica + replicas) % replicas;
      const auto count = static_cast<int>(piece.count / replicas + (turn < piece.count % replicas ? 1 : 0));
      sp.counts.push_back(count);
      sp.displacements.push_back(at);
      at += count;
    }
    dealt += piece.count;
  }
  return out;
}

// Which share a stage's optimizer keeps (exec/runtime/stage.hpp): replica
// `replica` of `replicas`, over pieces of at most `bucket_elements` values.
struct ZeroShare {
  int replicas = 1;
  int replica = 0;
  std::int64_t bucket_elements = 1;
};

// A run of one tensor's values: [first, first + count).
struct ValueRange {
  std::int64_t first = 0;
  std::int64_t count = 0;
  bool operator==(const ValueRange&) const = default;
};

// The values of each tensor of `tensors` (pointers), in order: the sizes the
// stage and its reducer both cut.
template <class TensorPointers>
[[nodiscard]] std::vector<std::int64_t> tensor_sizes(const TensorPointers& tensors) {
  std::vector<std::int64_t> sizes;
  for (const auto* t : tensors) sizes.push_back(t->numel());
  return sizes;
}

// Per tensor of `sizes`, the runs `replica` owns (sharded_pieces' cut), in
// order; a tensor of which it owns nothing has none.
[[nodiscard]] inline std::vector<std::vector<ValueRange>> owned_ranges(std::span<const std::int64_t> sizes,
                                                                       std::int64_t bucket_elements, int replicas,
                                                                       int replica) {
  if (replica < 0 || replica >= replicas) throw std::invalid_argument("replica outside its group");
  std::vector<std::vector<ValueRange>> out(sizes.size());
  for (const ShardedPiece& sp : sharded_pieces(sizes, bucket_elements, replicas)) {
    const auto r = static_cast<std::size_t>(replica);
    if (sp.counts[r] == 0) continue;
    out[sp.piece.tensor].push_back({sp.piece.first + sp.displacements[r], sp.counts[r]});
  }
  return out;
}

// Each tensor of `sizes` whole: what an unsharded optimizer updates.
[[nodiscard]] inline std::vector<std::vector<ValueRange>> whole_ranges(std::span<const std::int64_t> sizes) {
  std::vector<std::vector<ValueRange>> out(sizes.size());
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] > 0) out[t].push_back({0, sizes[t]});
  }
  return out;
}

}  // namespace gpipe::exec
