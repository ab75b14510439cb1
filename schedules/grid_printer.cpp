#include "schedules/grid_printer.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "schedules/dependencies.hpp"

namespace gpipe::schedules {
namespace {

constexpr int kNotDone = std::numeric_limits<int>::max();

// What an action waits for, as positions; nullopt when it can never run: a
// dependency absent from the schedule, or an action too malformed to have any
// (the grid is drawn for broken schedules too, to show where they break).
using Needs = std::optional<std::vector<Position>>;

Needs needs_of(const Schedule& s, const Dependencies& deps, const Action& a) {
  if (a.stage.value < 0 || a.stage.value >= s.num_stages ||
      static_cast<int>(s.stage_to_rank.size()) < s.num_stages) {
    return std::nullopt;
  }
  std::vector<Position> out;
  for (const Action& d : deps.of(a)) {
    const auto p = deps.position(d);
    if (!p) return std::nullopt;
    out.push_back(*p);
  }
  return out;
}

class Replay {
 public:
  Replay(const Schedule& s, const std::vector<Position>& marks) : s_(s), marks_(marks) {
    const Dependencies deps(s);
    for (const auto& list : s.ranks) {
      needs_.emplace_back();
      for (const Action& a : list) needs_.back().push_back(needs_of(s, deps, a));
      done_at_.emplace_back(list.size(), kNotDone);
    }
    next_.assign(s.ranks.size(), 0);
    posted_.resize(s.ranks.size());
  }

  // Runs to the end or until stuck; returns rows of cells, the `stuck` row last if any.
  std::vector<std::vector<std::string>> run(bool& stuck) {
    std::vector<std::vector<std::string>> rows;
    for (int t = 0;; ++t) {
      settle_comm(t);
      if (finished()) break;
      std::vector<std::string> row;
      bool ran = false;
      for (std::size_t r = 0; r < s_.ranks.size(); ++r) {
        if (next_[r] >= s_.ranks[r].size()) {
          row.emplace_back();
        } else if (is_work(s_.ranks[r][next_[r]].kind) && ready(r, next_[r], t)) {
          row.push_back(cell(r, next_[r]));
          done_at_[r][next_[r]++] = t;
          ran = true;
        } else {
          row.emplace_back(".");
        }
      }
      if (!ran) {
        stuck = true;
        for (std::size_t r = 0; r < s_.ranks.size(); ++r) {
          const auto blocker = blocked_on(r);
          row[r] = blocker ? "[" + text(r, *blocker) + "]" : "";
        }
        rows.push_back(std::move(row));
        break;
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  std::string text(std::size_t r, std::size_t i) const { return to_string(s_.ranks[r][i]); }
  std::string cell(std::size_t r, std::size_t i) const {
    const bool marked = std::any_of(marks_.begin(), marks_.end(), [&](Position p) {
      return p.rank.at() == r && p.step >= 0 && static_cast<std::size_t>(p.step) == i;
    });
    return marked ? "[" + text(r, i) + "]" : text(r, i);
  }
  // What a stuck rank waits at: its next action, or the posted receive that
  // action (or, at the end of its list, the rank) still waits for.
  std::optional<std::size_t> blocked_on(std::size_t r) const {
    const auto& posted = posted_[r];
    if (next_[r] >= s_.ranks[r].size()) return posted.empty() ? std::nullopt : std::optional{posted.front()};
    if (const Needs& needs = needs_[r][next_[r]]) {
      for (const Position p : *needs) {
        const auto step = static_cast<std::size_t>(p.step);
        if (p.rank.at() == r && std::find(posted.begin(), posted.end(), step) != posted.end()) return step;
      }
    }
    return next_[r];
  }
  bool finished() const {
    for (std::size_t r = 0; r < s_.ranks.size(); ++r) {
      if (next_[r] < s_.ranks[r].size() || !posted_[r].empty()) return false;
    }
    return true;
  }
  // Whether action i of rank r has everything it needs done before step t.
  bool ready(std::size_t r, std::size_t i, int t) const {
    const Needs& needs = needs_[r][i];
    if (!needs) return false;
    return std::all_of(needs->begin(), needs->end(), [&](Position p) {
      return done_at_[p.rank.at()][static_cast<std::size_t>(p.step)] < t;
    });
  }
  // Everything but work takes no time: each such action completes, before
  // step t, as soon as it is next on its rank and its inputs are done. A
  // receive is posted and the rank goes on (blocks_rank); it completes once
  // its send has. A receive may unblock another rank's send chain, so repeat
  // until nothing moves.
  void settle_comm(int t) {
    for (bool moved = true; moved;) {
      moved = false;
      for (std::size_t r = 0; r < s_.ranks.size(); ++r) {
        auto& posted = posted_[r];
        for (auto it = posted.begin(); it != posted.end();) {
          if (!ready(r, *it, t)) {
            ++it;
            continue;
          }
          done_at_[r][*it] = t - 1;
          it = posted.erase(it);
          moved = true;
        }
        while (next_[r] < s_.ranks[r].size() && !is_work(s_.ranks[r][next_[r]].kind)) {
          const std::size_t i = next_[r];
          if (!blocks_rank(s_.ranks[r][i].kind)) {
            posted.push_back(i);
          } else if (ready(r, i, t)) {
            done_at_[r][i] = t - 1;
          } else {
            break;
          }
          ++next_[r];
          moved = true;
        }
      }
    }
  }

  const Schedule& s_;
  const std::vector<Position>& marks_;
  std::vector<std::vector<Needs>> needs_;  // [rank][step]
  std::vector<std::vector<int>> done_at_;  // [rank][step]: the step it finished in, or kNotDone
  std::vector<std::size_t> next_;          // per rank: index of the next action to run
  std::vector<std::vector<std::size_t>> posted_;  // per rank: receives posted, not yet complete
};

void append_row(std::string& out, const std::string& label, std::size_t label_width,
                const std::vector<std::string>& cells, std::size_t width, bool right_label) {
  std::string line = right_label ? fmt::format("{:>{}}", label, label_width)
                                 : fmt::format("{:<{}}", label, label_width);
  for (const auto& c : cells) line += fmt::format("  {:<{}}", c, width);
  line.erase(line.find_last_not_of(' ') + 1);
  out += line;
  out += '\n';
}

}  // namespace

std::string format_grid(const Schedule& schedule, const std::vector<Position>& marks) {
  bool stuck = false;
  const auto rows = Replay(schedule, marks).run(stuck);

  std::vector<std::string> header;
  for (std::size_t r = 0; r < schedule.ranks.size(); ++r) header.push_back(fmt::format("rank {}", r));
  std::size_t width = 0;
  for (const auto& h : header) width = std::max(width, h.size());
  for (const auto& row : rows) {
    for (const auto& c : row) width = std::max(width, c.size());
  }
  const std::size_t steps = rows.size() - (stuck ? 1 : 0);
  std::size_t label_width = std::max<std::size_t>(4, fmt::format("{}", steps > 0 ? steps - 1 : 0).size());
  if (stuck) label_width = std::max<std::size_t>(label_width, 5);

  std::string out;
  append_row(out, "step", label_width, header, width, false);
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const bool is_stuck = stuck && t + 1 == rows.size();
    append_row(out, is_stuck ? "stuck" : fmt::format("{}", t), label_width, rows[t], width, true);
  }
  return out;
}

bool grid_too_large(const Schedule& schedule) {
  const auto actions = static_cast<std::int64_t>(schedule.total_actions());
  return actions > kMaxGridCells / std::max(schedule.num_ranks, 1);
}

}  // namespace gpipe::schedules
