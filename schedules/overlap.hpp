// torch's composite cell `(0F3;3B1)OVERLAP_F_B` (DualPipeV): one forward and
// one backward of another micro-batch that a rank may run overlapped. A
// Schedule keeps the two as plain actions, next to each other in the rank's
// list, forward first, and names the pair in Schedule::overlapped; the readers
// and writers of every schedule file turn a pair into one cell and back.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// Whether a cell is written as a composite: it opens with '('.
[[nodiscard]] bool is_composite(std::string_view cell);

// Parses `(a;b)OVERLAP_F_B` with a the forward (F) and b the backward (B or
// I). Throws InputError("bad composite '<text>': <why>") otherwise.
[[nodiscard]] OverlapPair parse_overlap_pair(std::string_view text);

// "(0F3;3B1)OVERLAP_F_B"
[[nodiscard]] std::string to_string(const OverlapPair& pair);

// Reads one cell, a single action or a composite, onto the end of a rank's
// list (a composite's two actions, forward first, and its pair into
// `overlapped`). Throws InputError naming the cell's text.
void append_cell(std::string_view cell, std::vector<Action>& list, std::vector<OverlapPair>& overlapped);

// A rank's list as cells: an overlapped pair standing next to each other
// makes one composite cell, every other action a cell of its own.
[[nodiscard]] std::vector<std::string> cells_of(const Schedule& schedule, Rank rank);

// The backward overlapped with each forward of Schedule::overlapped.
class OverlapIndex {
 public:
  explicit OverlapIndex(const Schedule& schedule);
  OverlapIndex() = default;  // no pairs

  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] std::optional<Action> backward_of(const Action& forward) const;
  // Whether list[i] and list[i + 1] are an overlapped pair. (Inline and
  // quick for a schedule without pairs: the simulator asks for every action.)
  [[nodiscard]] bool pair_at(const std::vector<Action>& list, std::size_t i) const {
    return count_ != 0 && pair_in(list, i);
  }

 private:
  [[nodiscard]] bool pair_in(const std::vector<Action>& list, std::size_t i) const;

  // Per forward F(s, m), at s x M + m, its backward, or F where it has none:
  // an array, not a map, as the engine asks for every action of a schedule
  // with pairs. A pair the array cannot hold (a forward that is not an F
  // within the schedule's stages and micro-batches, or a "backward" that is
  // an F: a schedule built in code and not yet validated) goes to others_.
  std::vector<Action> by_forward_;
  std::unordered_map<Action, Action> others_;
  std::size_t num_microbatches_ = 0;
  std::size_t count_ = 0;  // pairs
};

}  // namespace gpipe::schedules
