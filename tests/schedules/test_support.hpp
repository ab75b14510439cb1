// Helpers for schedule tests: a rank's program as one string of action texts,
// so expectations read like the schedule tables in the docs.
#pragma once

#include <ostream>
#include <string>

#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"

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
