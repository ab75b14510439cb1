#include "interop/torch_csv.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text.hpp"
#include "schedules/overlap.hpp"

namespace gpipe::interop {
namespace {

// A guard against a typo such as 99999F0, which would otherwise allocate a
// stage table that large before any other check could speak.
constexpr std::size_t kMaxStages = 1'000'000;

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

schedules::RecomputePolicy infer_recompute(const schedules::Schedule& s) {
  int recomputes = 0;
  int backwards = 0;
  for (const auto& list : s.ranks) {
    for (const schedules::Action& a : list) {
      recomputes += a.kind == schedules::ActionKind::R;
      backwards += is_input_backward(a.kind);
    }
  }
  if (recomputes == 0) return schedules::RecomputePolicy::never;
  return recomputes == backwards ? schedules::RecomputePolicy::stage : schedules::RecomputePolicy::stage_except_last;
}

}  // namespace

std::string to_csv(const schedules::Schedule& s) {
  std::string out;
  for (int r = 0; r < static_cast<int>(s.ranks.size()); ++r) {
    const auto cells = cells_of(s, schedules::Rank{r});
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += ',';
      out += cells[i];
    }
    out += '\n';
  }
  return out;
}

schedules::Schedule schedule_from_csv(std::string_view text, std::string_view origin, std::string_view name) {
  auto lines = split(text, '\n');
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();  // final newlines
  if (lines.empty()) throw InputError(fmt::format("{}: empty CSV, expected one line per rank", origin));

  schedules::Schedule s;
  s.name = std::string(name);
  s.num_ranks = static_cast<int>(lines.size());
  std::vector<std::optional<int>> rank_of_stage;
  int max_microbatch = -1;
  for (std::size_t r = 0; r < lines.size(); ++r) {
    auto& list = s.ranks.emplace_back();
    const auto cells = split(lines[r], ',');
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string_view cell = trim(cells[c]);
      if (cell.empty()) continue;  // torch writes idle slots as empty cells
      const std::size_t first = list.size();
      try {
        append_cell(cell, list, s.overlapped);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: line {} cell {}: {}", origin, r + 1, c + 1, e.what()));
      }
      for (std::size_t i = first; i < list.size(); ++i) {
        const schedules::Action& a = list[i];
        if (!is_stage_level(a.kind)) max_microbatch = std::max(max_microbatch, a.microbatch.value);
        const auto stage = a.stage.at();
        if (stage >= kMaxStages) {
          throw InputError(fmt::format("{}: line {} cell {}: stage {} is beyond the {} stages this tool reads",
                                       origin, r + 1, c + 1, stage, kMaxStages));
        }
        if (stage >= rank_of_stage.size()) rank_of_stage.resize(stage + 1);
        if (rank_of_stage[stage] && *rank_of_stage[stage] != static_cast<int>(r)) {
          throw InputError(fmt::format("{}: line {} cell {}: stage {} also appears on line {}; a stage "
                                       "runs on one rank",
                                       origin, r + 1, c + 1, stage, *rank_of_stage[stage] + 1));
        }
        rank_of_stage[stage] = static_cast<int>(r);
      }
    }
  }
  for (std::size_t stage = 0; stage < rank_of_stage.size(); ++stage) {
    if (!rank_of_stage[stage]) {
      throw InputError(fmt::format("{}: stage {} has no actions (stages are numbered from 0)", origin, stage));
    }
    s.stage_to_rank.emplace_back(*rank_of_stage[stage]);
  }
  s.num_stages = static_cast<int>(rank_of_stage.size());
  // Every micro-batch has a forward of its own: a larger number than the file
  // has actions names micro-batches that cannot be there (and would size the
  // checker's work by the number, not by the file).
  const std::size_t actions = s.total_actions();
  if (static_cast<std::size_t>(max_microbatch + 1) > actions) {
    throw InputError(fmt::format("{}: micro-batch {} in a file of {} actions: at most {} micro-batches fit", origin,
                                 max_microbatch, actions, actions));
  }
  s.num_microbatches = max_microbatch + 1;
  s.recompute = infer_recompute(s);
  return s;
}

}  // namespace gpipe::interop
