// One action of a schedule, {stage, kind, microbatch}, and its text form
// `<stage><KIND><microbatch>` (2F0, 3B7, 1R4, 0SEND_F3, 1RECV_B2, 0WAIT_SEND_F3),
// or `<stage><KIND>` for the kinds of a whole stage (0STEP, 1UNSHARD,
// 2REDUCE_GRAD), which every error message and test expectation uses. The
// kinds are PyTorch 2.15's (torch.distributed.pipelining's _ComputationType)
// plus R and STEP.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "schedules/ids.hpp"

namespace gpipe::schedules {

enum class ActionKind : std::uint8_t {
  F,       // forward of one micro-batch through the stage
  B,       // full backward (input and weight gradients)
  I,       // backward, input gradient only (zero-bubble split)
  W,       // backward, weight gradient only (zero-bubble split)
  R,       // re-materialisation: recompute the forward before the backward
  SEND_F,  // send the stage's activation to the next stage
  RECV_F,  // receive the previous stage's activation
  SEND_B,  // send the stage's input gradient to the previous stage
  RECV_B,  // receive the next stage's gradient
  STEP,    // optimizer step of the stage, after its last backward
  // The rank waits until its send of that activation / gradient has completed
  // (torch retires a send only here).
  WAIT_SEND_F,
  WAIT_SEND_B,
  // FSDP / data-parallel housekeeping of a whole stage, as torch writes it:
  // gather and free its parameters, start and await its gradient reduction.
  UNSHARD,
  RESHARD,
  REDUCE_GRAD,
  WAIT_REDUCE_GRAD,
};

inline constexpr int kNumActionKinds = 16;

[[nodiscard]] std::string_view to_string(ActionKind kind);
// Parses a kind name as written in the text form ("F", "SEND_B", ...).
[[nodiscard]] std::optional<ActionKind> parse_action_kind(std::string_view text);

// Compute actions run on a rank's compute stream; comm actions on its send/recv streams.
[[nodiscard]] constexpr bool is_comm(ActionKind k) {
  return k == ActionKind::SEND_F || k == ActionKind::RECV_F || k == ActionKind::SEND_B ||
         k == ActionKind::RECV_B;
}
[[nodiscard]] constexpr bool is_compute(ActionKind k) { return !is_comm(k); }
[[nodiscard]] constexpr bool is_send_wait(ActionKind k) {
  return k == ActionKind::WAIT_SEND_F || k == ActionKind::WAIT_SEND_B;
}
[[nodiscard]] constexpr bool is_housekeeping(ActionKind k) {
  return k == ActionKind::UNSHARD || k == ActionKind::RESHARD || k == ActionKind::REDUCE_GRAD ||
         k == ActionKind::WAIT_REDUCE_GRAD;
}
// The work a cost model prices (F, B, I, W, R, STEP). The other actions of the
// compute stream, send waits and housekeeping, only order it.
[[nodiscard]] constexpr bool is_work(ActionKind k) {
  return !is_comm(k) && !is_send_wait(k) && !is_housekeeping(k);
}
// STEP and housekeeping belong to a whole stage: their text has no micro-batch
// and their micro-batch is 0.
[[nodiscard]] constexpr bool is_stage_level(ActionKind k) {
  return k == ActionKind::STEP || is_housekeeping(k);
}
// B and I both consume the gradient from the next stage and produce one for the previous.
[[nodiscard]] constexpr bool is_input_backward(ActionKind k) {
  return k == ActionKind::B || k == ActionKind::I;
}

struct Action {
  Stage stage;
  ActionKind kind = ActionKind::F;
  Microbatch microbatch;  // 0 for the stage-level kinds (is_stage_level), which have none

  auto operator<=>(const Action&) const = default;
};

[[nodiscard]] inline Action make_action(int stage, ActionKind kind, int microbatch = 0) {
  return Action{Stage{stage}, kind, Microbatch{microbatch}};
}

[[nodiscard]] std::string to_string(const Action& action);
// Parses the text form; throws InputError naming the text when it is malformed.
// Also reads `BW`, the older spelling of B.
[[nodiscard]] Action parse_action(std::string_view text);

}  // namespace gpipe::schedules

template <>
struct std::hash<gpipe::schedules::Action> {
  std::size_t operator()(const gpipe::schedules::Action& a) const noexcept {
    return (static_cast<std::size_t>(a.stage.value) * 1000003u +
            static_cast<std::size_t>(a.microbatch.value)) * 16u +
           static_cast<std::size_t>(a.kind);
  }
};
