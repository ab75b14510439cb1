// DualPipeV (DeepSeek-V3's DualPipe cut in half, Qi et al.'s V placement), as
// torch's DualPipeV: two stages per rank in a V (rank r holds stages r and
// 2K-1-r). After a warm-up of forwards and zero-bubble I/W steps, each step
// pairs the forward of one stage with the backward of the other, and torch
// runs the pair as one overlapped action, `(0F3;3B1)OVERLAP_F_B`: here the
// two stand next to each other, forward first, and the pair is recorded in
// Schedule::overlapped. The cool-down splits half of the last backwards into
// I and W to fill the drain. torch refuses M < 2K (fewer micro-batches than
// stages), and so do we.
//
// K=2, M=5 ([F;B] an overlapped pair; stages 0 and 3 on rank 0, 1 and 2 on rank 1):
//
//   rank 0: 0F0 0F1 0F2 3F0 3I0 3W0 3F1 [0F3;3B1] [3F2;0B0] [0F4;3B2] [3F3;0B1]
//           3B3 [3F4;0B2] 3B4 0I3 0W3 0I4 0W4
//   rank 1: 1F0 2F0 1F1 2F1 1F2 2B0 [2F2;1B0] [1F3;2B1] [2F3;1B1] [1F4;2B2]
//           [2F4;1B2] 2B3 1B3 2I4 1I4 2W4 1W4
#include <deque>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "schedules/generators/multi_stage.hpp"
#include "schedules/generators/skeleton.hpp"

namespace gpipe::schedules {
namespace {

// One rank's list as torch's DualPipeV builds it: per-stage counters of
// forwards and backwards (B and I share one), and a queue of the Is whose W
// is still to come.
class DualPipeVRank {
 public:
  DualPipeVRank(int num_ranks, Schedule& schedule, int rank)
      : first_(rank), second_(2 * num_ranks - 1 - rank), schedule_(schedule),
        order_(schedule.ranks[static_cast<std::size_t>(rank)]),
        forwards_(static_cast<std::size_t>(2 * num_ranks), 0),
        backwards_(static_cast<std::size_t>(2 * num_ranks), 0) {}

  [[nodiscard]] int first() const { return first_; }
  [[nodiscard]] int second() const { return second_; }

  void forward(int stage) { order_.push_back(make_action(stage, ActionKind::F, next_forward(stage))); }
  void backward(int stage, ActionKind kind) {
    order_.push_back(make_action(stage, kind, next_backward(stage)));
    if (kind == ActionKind::I) awaiting_weight_.push_back(order_.back());
  }
  // The oldest I's W, if any is waiting.
  void weight_if_pending() {
    if (awaiting_weight_.empty()) return;
    const Action i = awaiting_weight_.front();
    awaiting_weight_.pop_front();
    order_.push_back({i.stage, ActionKind::W, i.microbatch});
  }
  void overlapped(int forward_stage, int backward_stage) {
    const Action f = make_action(forward_stage, ActionKind::F, next_forward(forward_stage));
    const Action b = make_action(backward_stage, ActionKind::B, next_backward(backward_stage));
    order_.push_back(f);
    order_.push_back(b);
    schedule_.overlapped.push_back({f, b});
  }

 private:
  int next_forward(int stage) { return forwards_[static_cast<std::size_t>(stage)]++; }
  int next_backward(int stage) { return backwards_[static_cast<std::size_t>(stage)]++; }

  int first_, second_;
  Schedule& schedule_;
  std::vector<Action>& order_;
  std::vector<int> forwards_, backwards_;  // indexed by stage
  std::deque<Action> awaiting_weight_;
};

// torch's eight steps (ScheduleDualPipeV._calculate_single_rank_operations).
void build_rank(Schedule& s, int r) {
  const int K = s.num_ranks;
  const int M = s.num_microbatches;
  DualPipeVRank rank(K, s, r);
  const int first = rank.first(), second = rank.second();
  constexpr ActionKind B = ActionKind::B, I = ActionKind::I;
  for (int i = 0; i < 2 * (K - r - 1); ++i) rank.forward(first);  // 1: F of the first stage
  for (int i = 0; i < r + 1; ++i) {                            // 2: F0 F1
    rank.forward(first);
    rank.forward(second);
  }
  for (int i = 0; i < K - r - 1; ++i) {  // 3: I1 W F1, zero bubble
    rank.backward(second, I);
    rank.weight_if_pending();
    rank.forward(second);
  }
  for (int i = 0; i < M - 2 * K + r + 1; ++i) {  // 4, the main step: [F0;B1] [F1;B0]
    if (i == 0 && r == K - 1) {
      // torch does not overlap the first pair on the last rank, to shrink its bubble.
      rank.forward(first);
      rank.backward(second, B);
    } else {
      rank.overlapped(first, second);
    }
    rank.overlapped(second, first);
  }
  for (int i = 0; i < K - r - 1; ++i) {  // 5: B1 [F1;B0]
    rank.backward(second, B);
    rank.overlapped(second, first);
  }
  // 6: B1 B0, the second half split into I (W comes later); on odd ranks
  // the split starts one backward earlier.
  bool split = false;
  const int pairs = r + 1;
  for (int i = 0; i < pairs; ++i) {
    if (i == pairs / 2 && r % 2 == 1) split = true;
    rank.backward(second, split ? I : B);
    if (i == pairs / 2 && r % 2 == 0) split = true;
    rank.backward(first, split ? I : B);
  }
  for (int i = 0; i < K - r - 1; ++i) {  // 7: W B0
    rank.weight_if_pending();
    rank.backward(first, split ? I : B);
  }
  for (int i = 0; i < r + 1; ++i) rank.weight_if_pending();  // 8: the Ws left
}

}  // namespace

Schedule generate_dualpipev(const ScheduleOptions& o) {
  constexpr std::string_view name = "dualpipev";
  (void)stages_per_rank(name, o, kTwoStagesInAV);
  Schedule s = empty_schedule(name, o, v_placement(o.num_ranks));
  if (o.num_microbatches < 2 * o.num_ranks) {
    throw InputError(fmt::format(
        "--schedule dualpipev needs at least as many micro-batches as stages (as torch's DualPipeV): "
        "--microbatches {} < 2 x --stages {}",
        o.num_microbatches, o.num_ranks));
  }
  // At most a pair per forward of a rank's second stage and per backward
  // of its first: reserved once, not grown pair by pair.
  s.overlapped.reserve(2 * static_cast<std::size_t>(o.num_ranks) * static_cast<std::size_t>(o.num_microbatches));
  for (int r = 0; r < o.num_ranks; ++r) {
    s.ranks[static_cast<std::size_t>(r)].reserve(6 * static_cast<std::size_t>(o.num_microbatches));
    build_rank(s, r);
  }
  return s;
}

}  // namespace gpipe::schedules
