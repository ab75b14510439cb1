// What the ranks of a pipeline send each other: the activation a stage's
// forward hands to the next stage, or the gradient its backward hands to the
// previous one (and a tied embedding's weight gradient), named by a tag. Messages are matched by tag, not by arrival
// order, so a receive waits for exactly the message its action names,
// whatever else is already queued.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "schedules/ids.hpp"

namespace gpipe::exec {

enum class MessageKind : std::uint8_t {
  activation,  // the output of F(stage, m), for F(stage + 1, m)
  gradient,    // the input gradient of B(stage, m), for B(stage - 1, m)
  // A tied embedding's weight gradient of the first or the last stage, for
  // the other (schedules/tied_gradient.hpp); micro-batch 0.
  tied_gradient,
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

}  // namespace gpipe::exec
