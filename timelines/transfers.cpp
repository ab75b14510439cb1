#include "timelines/transfers.hpp"

#include <algorithm>
#include <map>

namespace gpipe::timelines {
namespace {

// The SEND whose message `receive` takes: from the stage before (activations) or after (gradients).
schedules::Action send_of(const schedules::Action& receive) {
  const bool forward = receive.kind == schedules::ActionKind::RECV_F;
  return schedules::Action{schedules::Stage{receive.stage.value + (forward ? -1 : 1)}, forward ? schedules::ActionKind::SEND_F : schedules::ActionKind::SEND_B,
                receive.microbatch};
}

}  // namespace

std::vector<MeasuredTransfer> measured_transfers(const Timeline& timeline) {
  // Each message's SEND, by action (stage and micro-batch say which message).
  std::map<schedules::Action, const TimedAction*> sends;
  for (const auto& a : timeline.actions) {
    if (a.action.kind == schedules::ActionKind::SEND_F || a.action.kind == schedules::ActionKind::SEND_B) sends.emplace(a.action, &a);
  }
  std::vector<MeasuredTransfer> out;
  for (const auto& a : timeline.actions) {
    if (a.action.kind != schedules::ActionKind::RECV_F && a.action.kind != schedules::ActionKind::RECV_B) continue;
    const auto send = sends.find(send_of(a.action));
    const std::int64_t from = send == sends.end() ? a.start_ns : std::max(a.start_ns, send->second->start_ns);
    out.push_back({&a, std::max<std::int64_t>(a.end_ns - from, 0)});
  }
  return out;
}

}  // namespace gpipe::timelines
