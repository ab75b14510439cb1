#include "exec/cpu/in_process_transport.hpp"

namespace gpipe::exec {

void InProcessTransport::send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
                              Tensor tensor) {
  tensor.charge_to(nullptr);  // in flight: neither the sender's nor the receiver's memory
  mailboxes_.post(from, to, tag, std::move(tensor));
}

Tensor InProcessTransport::receive(schedules::Rank to, schedules::Rank from,
                                   const MessageTag& tag) {
  return mailboxes_.take(to, from, tag);
}

}  // namespace gpipe::exec
