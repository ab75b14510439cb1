// Helpers for schedule tests: a rank's program as one string of action texts,
// so expectations read like the schedule tables in the docs, and timed actions
// written as text.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::schedules::testing {

// K ranks, M micro-batches, the family's own V.
inline ScheduleOptions options(int k, int m, RecomputePolicy recompute = RecomputePolicy::never) {
  ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  o.recompute = recompute;
  return o;
}

inline std::string program(const Schedule& s, int rank) {
  std::string out;
  for (const Action& a : s.actions(Rank{rank})) {
    if (!out.empty()) out += ' ';
    out += to_string(a);
  }
  return out;
}

// The action `action` (as "0F1") on `rank` from `start` to `end`, on its kind's stream.
inline timelines::TimedAction timed(int rank, const char* action, std::int64_t start, std::int64_t end) {
  const Action a = parse_action(action);
  return timelines::TimedAction{a, Rank{rank}, timelines::stream_of(a.kind), start, end};
}

}  // namespace gpipe::schedules::testing

namespace gpipe::schedules {

// GoogleTest prints actions, overlapped pairs and schedules in their text
// form, not their bytes.
inline void PrintTo(const Action& a, std::ostream* os) { *os << to_string(a); }
inline void PrintTo(const OverlapPair& p, std::ostream* os) {
  *os << '(' << to_string(p.forward) << ';' << to_string(p.backward) << ")OVERLAP_F_B";
}

inline void PrintTo(const Schedule& s, std::ostream* os) {
  *os << s.name << " K=" << s.num_stages << " M=" << s.num_microbatches
      << " recompute=" << to_string(s.recompute);
  for (int r = 0; r < static_cast<int>(s.ranks.size()); ++r) {
    *os << "\n  rank " << r << ": " << testing::program(s, r);
  }
}

}  // namespace gpipe::schedules
