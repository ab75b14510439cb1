#include "schedules/ir_text.hpp"

#include <fmt/format.h>

#include "schedules/grid_printer.hpp"

namespace gpipe::schedules {

std::string summary(const Schedule& s) {
  return fmt::format("{}: {} rank{}, {} stage{}, {} micro-batch{}, recompute {}, {}", s.name,
                     s.num_ranks, s.num_ranks == 1 ? "" : "s", s.num_stages,
                     s.num_stages == 1 ? "" : "s", s.num_microbatches,
                     s.num_microbatches == 1 ? "" : "es", to_string(s.recompute),
                     s.is_lowered() ? "lowered" : "compute only");
}

std::string to_text(const Schedule& s) {
  std::string out = summary(s) + "\n\n" + format_grid(s);
  if (s.is_lowered()) {
    out += "\nprogram of each rank (comm actions run on their own streams):\n";
    for (int r = 0; r < s.num_ranks; ++r) {
      out += fmt::format("rank {}:", r);
      for (const Action& a : s.actions(Rank{r})) out += " " + to_string(a);
      out += "\n";
    }
  }
  return out;
}

}  // namespace gpipe::schedules
