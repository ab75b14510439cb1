#include "exec/cpu/in_process_link.hpp"

namespace gpipe::exec::cpu {

void InProcessLink::send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
                         Tensor tensor, const ActionMark& mark) {
  const TimedScope timed(timer_, mark);
  tensor.charge_to(nullptr);  // in flight: neither the sender's nor the receiver's memory
  mailboxes_.post(from, to, tag, std::move(tensor));
}

Tensor InProcessLink::receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                              const ActionMark& mark) {
  const TimedScope timed(timer_, mark);
  return mailboxes_.take(to, from, tag);
}

}  // namespace gpipe::exec::cpu
