#include "interop/torch_dialect.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace gpipe::interop {

schedules::Schedule torch_comms_dialect(const schedules::Schedule& lowered) {
  if (!lowered.is_lowered()) return lowered;
  using K = schedules::ActionKind;
  schedules::Schedule out = lowered;
  for (auto& list : out.ranks) {
    std::vector<schedules::Action> with_waits;
    with_waits.reserve(list.size() * 2);
    std::vector<schedules::Action> pending;  // the sends not yet waited for, in the order sent
    for (const schedules::Action& a : list) {
      if (a.kind == K::R) {
        throw InputError(to_string(a) +
                         ": torch's schedule CSV has no recompute action; write the lowered schedule "
                         "with --recompute never");
      }
      if (a.kind == K::STEP) continue;
      with_waits.push_back(a);
      if (a.kind == K::SEND_F || a.kind == K::SEND_B) pending.push_back(a);
      if (!is_input_backward(a.kind)) continue;
      const schedules::Action send{a.stage, K::SEND_F, a.microbatch};
      if (const auto it = std::find(pending.begin(), pending.end(), send); it != pending.end()) {
        with_waits.push_back({a.stage, K::WAIT_SEND_F, a.microbatch});
        pending.erase(it);
      }
    }
    for (const schedules::Action& send : pending) {
      with_waits.push_back({send.stage, send.kind == K::SEND_F ? K::WAIT_SEND_F : K::WAIT_SEND_B, send.microbatch});
    }
    list = std::move(with_waits);
  }
  return out;
}

}  // namespace gpipe::interop
