#include "schedules/overlap.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text.hpp"

namespace gpipe::schedules {
namespace {

constexpr std::string_view kOverlapKind = "OVERLAP_F_B";

}  // namespace

bool is_composite(std::string_view cell) { return cell.starts_with('('); }

OverlapPair parse_overlap_pair(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return InputError(fmt::format("bad composite '{}': {}", text, why));
  };
  if (!is_composite(text)) throw fail("expected (<forward>;<backward>)OVERLAP_F_B");
  const std::size_t close = text.find(')');
  if (close == std::string_view::npos) throw fail("no closing ')'");
  const std::string_view kind = text.substr(close + 1);
  if (kind != kOverlapKind) {
    throw fail(fmt::format("unknown composite kind '{}' (torch's is OVERLAP_F_B)", kind));
  }
  std::vector<std::string_view> parts;
  std::string_view inside = text.substr(1, close - 1);
  for (std::size_t semi = inside.find(';');; semi = inside.find(';')) {
    parts.push_back(trim(inside.substr(0, semi)));
    if (semi == std::string_view::npos) break;
    inside.remove_prefix(semi + 1);
  }
  if (parts.size() != 2) {
    throw fail(fmt::format("holds {} actions; OVERLAP_F_B holds one forward and one backward", parts.size()));
  }
  OverlapPair pair;
  try {
    pair.forward = parse_action(parts[0]);
    pair.backward = parse_action(parts[1]);
  } catch (const InputError& e) {
    throw fail(e.what());
  }
  if (pair.forward.kind != ActionKind::F || !is_input_backward(pair.backward.kind)) {
    throw fail("expected a forward then a backward (B or I), e.g. (0F3;3B1)OVERLAP_F_B");
  }
  return pair;
}

std::string to_string(const OverlapPair& pair) {
  return fmt::format("({};{}){}", to_string(pair.forward), to_string(pair.backward), kOverlapKind);
}

void append_cell(std::string_view cell, std::vector<Action>& list, std::vector<OverlapPair>& overlapped) {
  if (!is_composite(cell)) {
    list.push_back(parse_action(cell));
    return;
  }
  const OverlapPair pair = parse_overlap_pair(cell);
  list.push_back(pair.forward);
  list.push_back(pair.backward);
  overlapped.push_back(pair);
}

std::vector<std::string> cells_of(const Schedule& schedule, Rank rank) {
  const OverlapIndex pairs(schedule);
  const auto& list = schedule.actions(rank);
  std::vector<std::string> cells;
  cells.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (pairs.pair_at(list, i)) {
      cells.push_back(to_string(OverlapPair{list[i], list[i + 1]}));
      ++i;
    } else {
      cells.push_back(to_string(list[i]));
    }
  }
  return cells;
}

OverlapIndex::OverlapIndex(const Schedule& schedule)
    : num_microbatches_(static_cast<std::size_t>(std::max(schedule.num_microbatches, 0))),
      count_(schedule.overlapped.size()) {
  if (count_ == 0) return;
  const auto stages = static_cast<std::size_t>(std::max(schedule.num_stages, 0));
  by_forward_.assign(stages * num_microbatches_, Action{});  // Action{} is 0F0: no pair
  for (const OverlapPair& p : schedule.overlapped) {
    const Action& f = p.forward;
    if (backward_of(f)) continue;  // the first pair of a forward stands
    if (f.kind == ActionKind::F && p.backward.kind != ActionKind::F && f.stage.value >= 0 && f.stage.at() < stages &&
        f.microbatch.value >= 0 && f.microbatch.at() < num_microbatches_) {
      by_forward_[f.stage.at() * num_microbatches_ + f.microbatch.at()] = p.backward;
    } else {
      others_.emplace(f, p.backward);
    }
  }
}

std::optional<Action> OverlapIndex::backward_of(const Action& forward) const {
  if (count_ == 0) return std::nullopt;
  if (forward.kind == ActionKind::F && forward.stage.value >= 0 && forward.microbatch.value >= 0 &&
      forward.microbatch.at() < num_microbatches_) {
    const std::size_t at = forward.stage.at() * num_microbatches_ + forward.microbatch.at();
    if (at < by_forward_.size() && by_forward_[at].kind != ActionKind::F) return by_forward_[at];
  }
  if (others_.empty()) return std::nullopt;
  const auto it = others_.find(forward);
  if (it == others_.end()) return std::nullopt;
  return it->second;
}

bool OverlapIndex::pair_in(const std::vector<Action>& list, std::size_t i) const {
  if (i + 1 >= list.size()) return false;
  const auto b = backward_of(list[i]);
  return b && *b == list[i + 1];
}

}  // namespace gpipe::schedules
