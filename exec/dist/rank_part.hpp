// What one process of a multi-process run (one rank per process) measured,
// for the process of the loss stage, which alone reports: its rank's static
// bytes and, per measured step, its actions' intervals and its memory
// changes. Parts travel through the rendezvous store as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/memory_log.hpp"
#include "schedules/action.hpp"

namespace gpipe::exec {

struct RankPart {
  int rank = 0;
  std::int64_t static_bytes = 0;
  struct Step {
    std::vector<std::pair<schedules::Action, Interval>> intervals;
    std::vector<MemoryChange> memory;
    bool operator==(const Step&) const = default;
  };
  std::vector<Step> steps;  // per measured step
  bool operator==(const RankPart&) const = default;
};

[[nodiscard]] std::string to_json(const RankPart& part);
// Throws RunError naming the part when `text` is not one.
[[nodiscard]] RankPart parse_rank_part(const std::string& text);

// Every process publishes its part; the process of rank `reporter` gets them
// all, in rank order (the others get none). Then every process waits until
// the reporter has read them, since rank 0 serves the store.
[[nodiscard]] std::vector<RankPart> exchange_parts(TcpStore& store, const RankPart& mine,
                                                   int world_size, int reporter);

}  // namespace gpipe::exec
