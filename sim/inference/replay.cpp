#include "sim/inference/replay.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::sim::inference {
namespace {

using timelines::MemoryChange;
using timelines::peak_of;
using schedules::Action;
using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;
using timelines::Stream;

}  // namespace

ServingRun replay(const CostModel& costs, const LinkModel& links, int num_stages, const Workload& workload,
           std::span<const std::int64_t> state_bytes, bool record) {
  if (num_stages < 1) throw std::invalid_argument("inference::replay: no stages");
  if (!state_bytes.empty() && std::cmp_not_equal(state_bytes.size(), num_stages)) {
    throw std::invalid_argument("inference::replay: state_bytes must have one entry per stage");
  }
  if (static_cast<std::int64_t>(workload.requests) * num_stages > kMaxForwards) {
    throw InputError(fmt::format("--requests {} x --stages {} is more than the {} forwards a replay holds",
                                 workload.requests, num_stages, kMaxForwards));
  }
  const std::vector<std::int64_t> arrivals = arrival_times_ns(workload);
  const auto K = static_cast<std::size_t>(num_stages);
  const std::size_t R = arrivals.size();
  const auto B = static_cast<std::size_t>(workload.in_flight);

  ServingRun run;
  run.items.resize(R);
  run.busy_ns.assign(K, 0);
  run.state_bytes.assign(K, 0);
  const auto streams = static_cast<std::int64_t>(std::min(B, R));
  for (std::size_t s = 0; s < state_bytes.size(); ++s) run.state_bytes[s] = streams * state_bytes[s];

  std::vector<std::int64_t> compute_free(K, 0);  // end of the stage's last forward
  std::vector<std::int64_t> link_free(K, 0);     // link s -> s+1: end of its last message
  std::vector<std::vector<MemoryChange>> changes(K);
  if (record) run.timeline.actions.reserve(R * (3 * K - 2));

  for (std::size_t r = 0; r < R; ++r) {
    ItemTimes& item = run.items[r];
    item.admitted_ns = r >= B ? std::max(arrivals[r], run.items[r - B].completed_ns) : arrivals[r];
    // In the closed loop an item is issued when it can enter (the next token
    // of a sequence when its last one is out): it arrives as it is admitted.
    item.arrival_ns = workload.closed_loop() ? item.admitted_ns : arrivals[r];
    const Microbatch m{static_cast<int>(r)};
    std::int64_t ready = item.admitted_ns;  // when stage s's input is there
    for (std::size_t s = 0; s < K; ++s) {
      const Stage stage{static_cast<int>(s)};
      const Action f{stage, ActionKind::F, m};
      const std::int64_t start = std::max(ready, compute_free[s]);
      const std::int64_t end = start + costs.duration_ns(f);
      compute_free[s] = end;
      run.busy_ns[s] += end - start;
      const std::int64_t out = costs.boundary_bytes(stage, m);
      changes[s].push_back({start, out});
      if (s > 0) changes[s].push_back({end, -costs.boundary_bytes(Stage{stage.value - 1}, m)});
      if (record) run.timeline.actions.push_back({f, Rank{stage.value}, Stream::compute, start, end});
      if (s + 1 == K) {
        changes[s].push_back({end, -out});
        item.completed_ns = end;
        break;
      }
      const Rank from{stage.value};
      const Rank to{stage.value + 1};
      const std::int64_t send_start = std::max(end, link_free[s]);
      const std::int64_t arrive = send_start + links.transfer_ns(from, to, out);
      link_free[s] = arrive;
      changes[s].push_back({send_start, -out});  // in flight it is charged to no rank
      changes[s + 1].push_back({arrive, out});
      if (record) {
        run.timeline.actions.push_back({{stage, ActionKind::SEND_F, m}, from, Stream::send, send_start, arrive});
        run.timeline.actions.push_back(
            {{Stage{stage.value + 1}, ActionKind::RECV_F, m}, to, Stream::recv, send_start, arrive});
      }
      ready = arrive;
    }
  }
  run.peak_bytes.resize(K);
  for (std::size_t s = 0; s < K; ++s) {
    run.peak_bytes[s] = peak_of(Rank{static_cast<int>(s)}, run.state_bytes[s], changes[s],
                              record ? &run.timeline.memory : nullptr);
  }
  return run;
}

}  // namespace gpipe::sim::inference
