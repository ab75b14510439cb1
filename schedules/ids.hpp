// Strong small types for the three indices that are easiest to mix up:
// a stage (a piece of the model), a rank (a worker), a micro-batch.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>

namespace gpipe::schedules {

template <class Tag>
struct Index {
  int value = 0;

  constexpr Index() = default;
  constexpr explicit Index(int v) : value(v) {}
  constexpr auto operator<=>(const Index&) const = default;
  // For indexing the per-stage / per-rank vectors a schedule holds.
  [[nodiscard]] constexpr std::size_t at() const { return static_cast<std::size_t>(value); }
};

using Stage = Index<struct StageTag>;
using Rank = Index<struct RankTag>;
using Microbatch = Index<struct MicrobatchTag>;

}  // namespace gpipe::schedules

template <class Tag>
struct std::hash<gpipe::schedules::Index<Tag>> {
  std::size_t operator()(gpipe::schedules::Index<Tag> i) const noexcept {
    return std::hash<int>{}(i.value);
  }
};
