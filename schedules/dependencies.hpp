// The data dependencies between the actions of a schedule: which actions must
// have finished before an action may start. Together with program order on
// each rank they form the dependency graph that validation checks for cycles,
// the grid printer lays out, and the simulator and executor obey.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "schedules/gradient_reduction.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// Program order: an action waits for the actions before it on its rank that
// block the rank. A receive does not: as in torch's runtime it is posted and
// the rank goes on; only the action that consumes it waits (a data edge).
// Torch's files post receives early, before the rank's previous compute.
[[nodiscard]] constexpr bool blocks_rank(ActionKind k) {
  return k != ActionKind::RECV_F && k != ActionKind::RECV_B;
}

// The rules of docs/design.md, as one function every user shares: calls
// visit(dependency) for each action `a` needs. `contains(action)` says whether
// the schedule holds an action (R is optional; I replaces B where the backward
// is split); `via_comm` says whether cross-rank data goes through SEND/RECV
// actions. Allocation-free, so the simulator can call it per action.
template <class Contains, class Visit>
void for_each_dependency(const Schedule& schedule, bool via_comm, const Action& a,
                         const Contains& contains, const Visit& visit) {
  using K = ActionKind;
  const Stage s = a.stage;
  const Microbatch m = a.microbatch;
  const Stage prev{s.value - 1};
  const Stage next{s.value + 1};
  const auto backward = [&](Stage st, Microbatch mb) {
    const Action input_grad{st, K::I, mb};
    return contains(input_grad) ? input_grad : Action{st, K::B, mb};
  };
  // What finishes the stage's weight gradients: each micro-batch's B, or its W.
  const auto final_backwards = [&] {
    for (int mb = 0; mb < schedule.num_microbatches; ++mb) {
      const Action b = backward(s, Microbatch{mb});
      visit(b.kind == K::I ? Action{s, K::W, Microbatch{mb}} : b);
    }
  };
  switch (a.kind) {
    case K::F:
      if (s.value > 0) {
        visit(via_comm && schedule.crosses_ranks(prev) ? Action{s, K::RECV_F, m} : Action{prev, K::F, m});
      }
      break;
    case K::B:
    case K::I:
      visit(Action{s, K::F, m});
      if (contains(Action{s, K::R, m})) visit(Action{s, K::R, m});
      if (next.value < schedule.num_stages) {
        visit(via_comm && schedule.crosses_ranks(s) ? Action{s, K::RECV_B, m} : backward(next, m));
      }
      break;
    case K::R:
      visit(Action{s, K::F, m});
      break;
    case K::W:
      visit(Action{s, K::I, m});
      break;
    case K::STEP:
      final_backwards();
      break;
    case K::SEND_F:
      visit(Action{s, K::F, m});
      break;
    case K::RECV_F:
      visit(Action{prev, K::SEND_F, m});
      break;
    case K::SEND_B:
      visit(backward(s, m));
      break;
    case K::RECV_B:
      visit(Action{next, K::SEND_B, m});
      break;
    // A send completes once its data is in: the receiver posted its receive
    // and the data arrived.
    case K::WAIT_SEND_F:
      visit(Action{s, K::SEND_F, m});
      visit(Action{next, K::RECV_F, m});
      break;
    case K::WAIT_SEND_B:
      visit(Action{s, K::SEND_B, m});
      visit(Action{prev, K::RECV_B, m});
      break;
    // A stage's gradient reductions (gradient_reduction.hpp) start once its
    // gradients are final; the wait waits for its own (data parallelism) and
    // for a tied embedding's partner's.
    case K::REDUCE_GRAD:
      if (reduces_gradients(schedule, s)) final_backwards();
      break;
    case K::WAIT_REDUCE_GRAD:
      if (schedule.data_parallel > 1) visit(Action{s, K::REDUCE_GRAD, Microbatch{0}});
      if (const auto partner = tied_partner(schedule, s)) visit(Action{*partner, K::REDUCE_GRAD, Microbatch{0}});
      break;
    case K::UNSHARD:
    case K::RESHARD:
      break;  // only program order: the collectives they stand for are the stage's own
  }
}

class Dependencies {
 public:
  // Keeps a reference to `schedule`, which must outlive this object.
  // Cross-rank data goes through SEND/RECV when the schedule has any.
  explicit Dependencies(const Schedule& schedule);

  // The actions `action` needs (for_each_dependency above):
  //   F(s,m) <- F(s-1,m), or RECV_F(s,m) when s-1 is on another rank and
  //             the schedule has comm actions
  //   B/I(s,m) <- F(s,m), R(s,m) if present, and the backward of (s+1,m)
  //              (or RECV_B(s,m), likewise)
  //   R(s,m) <- F(s,m);  W(s,m) <- I(s,m);  STEP(s) <- every last backward of s
  //   SEND_F(s,m) <- F(s,m);  RECV_F(s,m) <- SEND_F(s-1,m)
  //   SEND_B(s,m) <- backward of (s,m);  RECV_B(s,m) <- SEND_B(s+1,m)
  //   WAIT_SEND_F(s,m) <- SEND_F(s,m), RECV_F(s+1,m)
  //   WAIT_SEND_B(s,m) <- SEND_B(s,m), RECV_B(s-1,m)
  //   for a stage that reduces its gradients (gradient_reduction.hpp):
  //     REDUCE_GRAD(s) <- every last backward of s
  //     WAIT_REDUCE_GRAD(s) <- REDUCE_GRAD(s) with data parallelism, and
  //       REDUCE_GRAD(its partner) with a tied embedding
  //   UNSHARD, RESHARD, and otherwise REDUCE_GRAD, WAIT_REDUCE_GRAD <- nothing beyond program order
  // Some of them may be missing from the schedule: see position().
  [[nodiscard]] std::vector<Action> of(const Action& action) const;

  // Where an action first appears in the schedule, if it does.
  [[nodiscard]] std::optional<Position> position(const Action& action) const;
  [[nodiscard]] bool contains(const Action& action) const { return position(action).has_value(); }

 private:
  const Schedule& schedule_;
  bool via_comm_;  // cross-rank data goes through SEND/RECV actions
  std::unordered_map<Action, Position> index_;
};

}  // namespace gpipe::schedules
