// How the ranks of a pipeline exchange activations and gradients: the seam
// between the runtime and its wires. The CPU executor runs every rank in one
// process (exec/cpu/in_process_transport.hpp); a multi-process backend (NCCL)
// implements the same interface.
//
// Messages are matched by tag, not by arrival order, so a receive waits for
// exactly the message its action names, whatever else is already queued.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "exec/cpu/tensor.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

enum class MessageKind : std::uint8_t {
  activation,  // the output of F(stage, m), for F(stage + 1, m)
  gradient,    // the input gradient of B(stage, m), for B(stage - 1, m)
};

// Which message: the producing stage's data of one micro-batch in one step.
struct MessageTag {
  int step = 0;
  MessageKind kind = MessageKind::activation;
  schedules::Stage stage;  // the stage that produced it
  schedules::Microbatch microbatch;

  auto operator<=>(const MessageTag&) const = default;
};

// "activation of stage 2 micro-batch 3 (step 0)", for error messages.
[[nodiscard]] std::string to_string(const MessageTag& tag);

class Transport {
 public:
  virtual ~Transport() = default;

  // Hands `tensor` to rank `to`; never blocks. A message in flight is charged
  // to no memory account. Throws Aborted after abort().
  virtual void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
                    Tensor tensor) = 0;

  // Blocks until the message `tag` from rank `from` has reached rank `to` and
  // returns it. Throws Aborted when the run is aborted, before or while waiting.
  [[nodiscard]] virtual Tensor receive(schedules::Rank to, schedules::Rank from,
                                       const MessageTag& tag) = 0;

  // Wakes every blocked receive (which then throws Aborted); idempotent.
  virtual void abort() = 0;
};

}  // namespace gpipe::exec
