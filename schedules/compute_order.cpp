#include "schedules/compute_order.hpp"

#include <algorithm>

namespace gpipe::schedules {

Schedule compute_order(Schedule s) {
  for (auto& list : s.ranks) {
    std::erase_if(list, [](const Action& a) {
      return a.kind != ActionKind::F && a.kind != ActionKind::B && a.kind != ActionKind::I &&
             a.kind != ActionKind::W;
    });
  }
  return s;
}

}  // namespace gpipe::schedules
