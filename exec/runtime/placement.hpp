// Which ranks of a run this process runs: all of them as threads, or one of
// them here and the others in their own processes, which meet in a
// ProcessGroup (process_group.hpp). The trainer reads it, and so does a
// backend's Run (training_backend.hpp), which makes its resources for the
// ranks placed here alone.
#pragma once

#include <algorithm>
#include <vector>

#include "exec/runtime/process_group.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

struct Placement {
  std::vector<schedules::Rank> local;  // every rank when `group` is null
  ProcessGroup* group = nullptr;       // where the processes of the other ranks meet

  [[nodiscard]] bool here(schedules::Rank rank) const {
    return std::find(local.begin(), local.end(), rank) != local.end();
  }
};

}  // namespace gpipe::exec
