// The data dependencies between the actions of a schedule: which actions must
// have finished before an action may start. Together with program order on
// each rank they form the dependency graph that validation checks for cycles,
// the grid printer lays out, and the simulator and executor obey.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

class Dependencies {
 public:
  // Keeps a reference to `schedule`, which must outlive this object.
  explicit Dependencies(const Schedule& schedule);

  // The actions `action` needs, by DESIGN.md's rules:
  //   F(s,m) <- F(s-1,m), or RECV_F(s,m) when s-1 is on another rank and
  //             the schedule has comm actions
  //   B/I(s,m) <- F(s,m), R(s,m) if present, and the backward of (s+1,m)
  //              (or RECV_B(s,m), likewise)
  //   R(s,m) <- F(s,m);  W(s,m) <- I(s,m);  STEP(s) <- every last backward of s
  //   SEND_F(s,m) <- F(s,m);  RECV_F(s,m) <- SEND_F(s-1,m)
  //   SEND_B(s,m) <- backward of (s,m);  RECV_B(s,m) <- SEND_B(s+1,m)
  // Some of them may be missing from the schedule: see position().
  [[nodiscard]] std::vector<Action> of(const Action& action) const;

  // Where an action first appears in the schedule, if it does.
  [[nodiscard]] std::optional<Position> position(const Action& action) const;
  [[nodiscard]] bool contains(const Action& action) const { return position(action).has_value(); }

  // The action that produces the input gradient of (s,m): I where the schedule
  // splits the backward, B otherwise.
  [[nodiscard]] Action backward(Stage s, Microbatch m) const;

 private:
  const Schedule& schedule_;
  bool via_comm_;  // cross-rank data goes through SEND/RECV actions
  std::unordered_map<Action, Position> index_;
};

}  // namespace gpipe::schedules
