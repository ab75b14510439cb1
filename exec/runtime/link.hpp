// How the ranks of a run hand activations and gradients to each other: the
// seam between the worker and its wire. A backend supplies its links:
// - exec/cpu/in_process_link.hpp: ranks that are threads of one process hand
//   host tensors over (no bytes move);
// - exec/cuda/backend/: device-to-device copies between the ranks of one GPU,
//   and NCCL between processes.
//
// `Tensor` is what a stage computes with and sends; `Message` what a receive
// yields: the same type where a received tensor is usable at once, or a
// tensor with what orders it before its consumer (a GPU's arrival event),
// which the backend's RankDevice::ready() resolves when the consumer takes it.
// A link times what it does for a measured SEND or RECV with the run's timer.
#pragma once

#include "exec/runtime/action_mark.hpp"
#include "exec/runtime/message.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

template <class Tensor, class Message = Tensor>
class Link {
 public:
  virtual ~Link() = default;

  // SEND: `tensor` goes to rank `to`, returning without waiting for the
  // receiver (or, on a device, for the bytes). Throws Aborted after abort().
  virtual void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, Tensor tensor,
                    const ActionMark& mark) = 0;

  // RECV: blocks until the sender has sent the message `tag` (on a device,
  // not until its bytes have moved), and returns it in this rank's memory.
  // Throws Aborted when the run is aborted, before or while waiting.
  [[nodiscard]] virtual Message receive(schedules::Rank to, schedules::Rank from,
                                        const MessageTag& tag, const ActionMark& mark) = 0;

  // Wakes every blocked receive; idempotent, safe from any thread.
  virtual void abort() = 0;

  // On a worker's thread after an abort: ends what its device may still wait
  // for (a receive from a failed peer), so that the rank can drain.
  virtual void finish_abort() {}
};

}  // namespace gpipe::exec
