#include "sim/direct_replay.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "schedules/gradient_reduction.hpp"
#include "schedules/lower.hpp"
#include "schedules/overlap.hpp"
#include "sim/activation_memory.hpp"
#include "sim/huge_page_allocator.hpp"
#include "sim/stage_links.hpp"
#include "timelines/metrics.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;

// One stage at one micro-batch size: what its actions take, what they keep,
// and what its boundary's messages take (the activation on to s+1, the
// gradient back from s+1; both carry the stage's output bytes).
struct StagePrice {
  std::int64_t fwd_ns = 0;
  std::int64_t bwd_ns = 0;
  std::int64_t bwd_input_ns = 0;
  std::int64_t bwd_weight_ns = 0;
  std::int64_t optimizer_ns = 0;
  StageMemory memory;
  std::int64_t forward_message_ns = 0;
  std::int64_t backward_message_ns = 0;
};

constexpr std::int64_t kNotYet = -1;  // an arrival time not yet known

class DirectReplay {
 public:
  DirectReplay(const Schedule& s, const ProfileCosts& costs, const LinkModel& links)
      : num_stages_(static_cast<std::size_t>(s.num_stages)),
        num_microbatches_(static_cast<std::size_t>(s.num_microbatches)),
        layout_(link_layout(s)) {
    price(s, costs, links);
    const auto ranks = static_cast<std::size_t>(s.num_ranks);
    next_.resize(ranks);
    rank_end_.resize(ranks);
    rank_free_.assign(ranks, 0);
    memory_.assign(ranks, 0);
    peak_memory_.assign(ranks, 0);
    busy_.assign(ranks, 0);
    waiting_.assign(ranks, -1);
    next_recompute_.assign(ranks, 0);
    recompute_end_.assign(ranks, 0);
    stepped_.assign(ranks, 0);
    rank_of_stage_.resize(num_stages_);
    for (std::size_t st = 0; st < num_stages_; ++st) {
      rank_of_stage_[st] = s.rank_of(schedules::Stage{static_cast<int>(st)}).value;
    }
    link_free_.assign(layout_.ends.size(), 0);
    const std::size_t slots = num_stages_ * num_microbatches_;
    activation_in_.assign(slots, kNotYet);
    gradient_in_.assign(slots, kNotYet);
    recomputed_.assign(slots, 0);
  }

  // Reads the schedule once: false where a rank's list holds more than F, B,
  // I and W (R or STEP listed, comm actions, send waits, housekeeping: that
  // program is for the graph replay). Notes where lowering puts each R
  // (schedules::recomputes; before the pair, for the backward of an
  // overlapped pair, as for_each_compute_action in compute_program.hpp), and
  // marks its (stage, micro-batch), whose F needs to know at its end.
  bool read_programs(const Schedule& s) {
    const bool may_recompute = s.recompute != schedules::RecomputePolicy::never;
    // Pairs move only an R, so without recompute their index is not needed.
    const schedules::OverlapIndex pairs =
        may_recompute ? schedules::OverlapIndex(s) : schedules::OverlapIndex();
    for (int r = 0; r < s.num_ranks; ++r) {
      const auto rank = static_cast<std::size_t>(r);
      const std::vector<Action>& list = s.ranks[rank];
      next_recompute_[rank] = recompute_at_.size();
      bool second_of_pair = false;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const Action& a = list[i];
        if (a.kind != ActionKind::F && a.kind != ActionKind::W && !schedules::is_input_backward(a.kind)) return false;
        // (An unvalidated file's action beyond the stages or micro-batches
        // would index past the tables: the graph replay refuses it.)
        if (a.stage.value < 0 || a.stage.at() >= num_stages_ || a.microbatch.value < 0 ||
            a.microbatch.at() >= num_microbatches_) {
          return false;
        }
        if (!may_recompute) continue;
        if (second_of_pair) {  // its R, if any, comes before the pair
          second_of_pair = false;
          continue;
        }
        std::size_t backward = i;
        if (pairs.pair_at(list, i)) {
          backward = i + 1;
          second_of_pair = true;
        }
        if (schedules::is_input_backward(list[backward].kind) &&
            schedules::recomputes(s, schedules::Rank{r}, static_cast<int>(backward))) {
          recomputed_[slot(list[backward])] = 1;
          recompute_at_.push_back({static_cast<int>(i), list[backward]});
        }
      }
      recompute_end_[rank] = recompute_at_.size();
      rank_end_[rank] = static_cast<int>(list.size());
    }
    return true;
  }

  void run(const Schedule& s) {
    std::vector<int> runnable;
    runnable.reserve(next_.size());
    for (int r = static_cast<int>(next_.size()) - 1; r >= 0; --r) runnable.push_back(r);
    while (!runnable.empty()) {
      const int rank = runnable.back();
      runnable.pop_back();
      run_rank(s, rank, runnable);
    }
  }

  SimResult finish(const Schedule& schedule, const SimOptions& options) const {
    for (std::size_t r = 0; r < next_.size(); ++r) {
      if (next_[r] < rank_end_[r]) {
        throw stalled(static_cast<int>(r), schedule.ranks[r][static_cast<std::size_t>(next_[r])]);
      }
    }
    SimResult result;
    result.timeline.info = simulated_info(schedule, options);
    result.metrics =
        timelines::metrics_from_totals(result.timeline.info, makespan_, busy_, peak_memory_, compute_times_.means());
    return result;
  }

 private:
  [[nodiscard]] std::size_t slot(const Action& a) const {
    return a.stage.at() * num_microbatches_ + a.microbatch.at();
  }

  void price(const Schedule& s, const ProfileCosts& costs, const LinkModel& links) {
    const std::vector<int>& sizes = costs.microbatch_sizes();
    std::vector<int> distinct;
    size_index_.reserve(sizes.size());
    for (const int b : sizes) {
      auto it = std::find(distinct.begin(), distinct.end(), b);
      if (it == distinct.end()) it = distinct.insert(distinct.end(), b);
      size_index_.push_back(static_cast<std::uint32_t>(it - distinct.begin()));
    }
    prices_.resize(distinct.size() * num_stages_);
    for (std::size_t z = 0; z < distinct.size(); ++z) {
      const std::vector<profiles::StageCost>& stages = costs.at_size(distinct[z]);
      for (std::size_t st = 0; st < num_stages_; ++st) {
        const profiles::StageCost& c = stages[st];
        StagePrice& p = prices_[z * num_stages_ + st];
        p = {c.fwd_ns, c.bwd_ns, c.bwd_input_ns, c.bwd_weight_ns, c.optimizer_ns,
             {c.activation_bytes, c.input_bytes, c.weight_grad_stash_bytes}};
        if (st + 1 < num_stages_ && layout_.forward[st] >= 0) {
          const schedules::Rank here = s.rank_of(schedules::Stage{static_cast<int>(st)});
          const schedules::Rank there = s.rank_of(schedules::Stage{static_cast<int>(st) + 1});
          p.forward_message_ns = links.transfer_ns(here, there, c.output_bytes);
          p.backward_message_ns = links.transfer_ns(there, here, c.output_bytes);
        }
      }
    }
  }

  // Runs the rank's program as far as its inputs allow; a rank that waits
  // names the arrival it waits for in waiting_. The program is the rank's
  // list with an R before each backward that recomputes (before the pair,
  // for the backward of an overlapped pair) and the STEP of each of its
  // stages at the end, as for_each_compute_action (compute_program.hpp) has it.
  void run_rank(const Schedule& s, int rank, std::vector<int>& runnable) {
    const auto r = static_cast<std::size_t>(rank);
    const std::vector<Action>& list = s.ranks[r];
    std::int64_t free = rank_free_[r];
    std::int64_t memory = memory_[r];
    std::int64_t peak = peak_memory_[r];
    std::int64_t busy = busy_[r];
    int at = next_[r];
    const int end = rank_end_[r];
    const auto change_memory = [&](std::int64_t change) {
      if (change == 0) return;
      memory += change;
      peak = std::max(peak, memory);
    };
    // Work with no input from another rank: it starts once the rank is free.
    const auto run_local = [&](ActionKind kind, std::int64_t duration, const StageMemory& kept) {
      change_memory(memory_change_at_start(kind, kept));
      busy += duration;
      free += duration;
      makespan_ = std::max(makespan_, free);
    };
    for (; at < end; ++at) {
      const auto i = static_cast<std::size_t>(at);
      if (std::size_t& k = next_recompute_[r]; k < recompute_end_[r] && recompute_at_[k].place == at) {
        const Action& b = recompute_at_[k].backward;  // R(s, m) of this backward
        const StagePrice& price = prices_[size_index_[b.microbatch.at()] * num_stages_ + b.stage.at()];
        run_local(ActionKind::R, price.fwd_ns, price.memory);
        ++k;  // done, whatever the rank now waits for
      }
      const Action a = list[i];
      const std::size_t st = a.stage.at();
      const std::size_t here = slot(a);
      const StagePrice& price = prices_[size_index_[a.microbatch.at()] * num_stages_ + st];
      std::int64_t ready = 0;
      std::int64_t duration = 0;
      switch (a.kind) {
        case ActionKind::F:
          if (st > 0) {
            ready = activation_in_[here];
            if (ready == kNotYet) waiting_[r] = static_cast<std::int64_t>(2 * here);
          }
          duration = price.fwd_ns;
          break;
        case ActionKind::B:
        case ActionKind::I:
          if (st + 1 < num_stages_) {
            ready = gradient_in_[here];
            if (ready == kNotYet) waiting_[r] = static_cast<std::int64_t>(2 * here + 1);
          }
          duration = a.kind == ActionKind::B ? price.bwd_ns : price.bwd_input_ns;
          break;
        default:  // W
          duration = price.bwd_weight_ns;
          break;
      }
      if (ready == kNotYet) break;
      const std::int64_t start = std::max(free, ready);
      const std::int64_t finish = start + duration;
      change_memory(memory_change_at_start(a.kind, price.memory));
      change_memory(memory_change_at_end(a.kind, price.memory, recomputed_[here] != 0));
      busy += duration;
      free = finish;
      makespan_ = std::max(makespan_, finish);
      compute_times_.add(a.kind, duration);
      if (a.kind == ActionKind::F && st + 1 < num_stages_) {
        send(st + 1, here + num_microbatches_, finish, layout_.forward[st], price.forward_message_ns, activation_in_,
             2 * (here + num_microbatches_), runnable);
      } else if (a.kind != ActionKind::W && st > 0) {
        const StagePrice& below = prices_[size_index_[a.microbatch.at()] * num_stages_ + st - 1];
        send(st - 1, here - num_microbatches_, finish, layout_.backward[st - 1], below.backward_message_ns,
             gradient_in_, 2 * (here - num_microbatches_) + 1, runnable);
      }
    }
    if (at == end && !stepped_[r]) {
      // STEP of each of the rank's stages; the optimizer's cost is the same
      // at any size, so micro-batch 0's.
      for (std::size_t st = 0; st < num_stages_; ++st) {
        if (rank_of_stage_[st] != rank) continue;
        const StagePrice& price = prices_[size_index_[0] * num_stages_ + st];
        run_local(ActionKind::STEP, price.optimizer_ns, price.memory);
      }
      stepped_[r] = 1;
    }
    next_[r] = at;
    rank_free_[r] = free;
    memory_[r] = memory;
    peak_memory_[r] = peak;
    busy_[r] = busy;
  }

  // Hands an output made at `made` to slot `to` of the consumer's stage
  // `stage`: at once on the same rank (link -1), else as a message that
  // starts once its link is free. Wakes the consumer's rank if it waits for it.
  void send(std::size_t stage, std::size_t to, std::int64_t made, int link, std::int64_t transfer_ns,
            BigVector<std::int64_t>& arrivals, std::size_t key, std::vector<int>& runnable) {
    std::int64_t arrival = made;
    if (link >= 0) {
      std::int64_t& link_free = link_free_[static_cast<std::size_t>(link)];
      arrival = std::max(made, link_free) + transfer_ns;
      link_free = arrival;
      makespan_ = std::max(makespan_, arrival);
    }
    arrivals[to] = arrival;
    const int consumer = rank_of_stage_[stage];
    std::int64_t& waits = waiting_[static_cast<std::size_t>(consumer)];
    if (waits == static_cast<std::int64_t>(key)) {
      waits = -1;
      runnable.push_back(consumer);
    }
  }

  std::size_t num_stages_;
  std::size_t num_microbatches_;
  LinkLayout layout_;
  std::vector<StagePrice> prices_;         // per (size, stage)
  std::vector<std::uint32_t> size_index_;  // per micro-batch: its size's place in prices_
  std::vector<int> rank_of_stage_;
  // Where each R runs: before the action at `place` of its rank's list.
  struct RecomputeAt {
    int place;
    Action backward;  // the backward it recomputes for
  };
  std::vector<RecomputeAt> recompute_at_;  // rank after rank, in list order
  BigVector<std::int64_t> activation_in_;  // per (stage, micro-batch): when its input arrived
  BigVector<std::int64_t> gradient_in_;    // per (stage, micro-batch): when its output's gradient arrived
  BigVector<std::uint8_t> recomputed_;     // per (stage, micro-batch): 1 when R recomputes it
  std::vector<std::int64_t> link_free_;    // per link: when its last message arrives
  std::vector<int> next_, rank_end_;       // per rank: its next place in its list, one past its last
  std::vector<std::size_t> next_recompute_, recompute_end_;  // per rank: its next R and its end in recompute_at_
  std::vector<std::uint8_t> stepped_;      // per rank: 1 once its STEPs have run
  std::vector<std::int64_t> rank_free_, memory_, peak_memory_, busy_;
  std::vector<std::int64_t> waiting_;  // per rank: 2 x slot (+1 for a gradient) it waits for, or -1
  std::int64_t makespan_ = 0;
  timelines::ComputeTimeTotals compute_times_;
};

}  // namespace

std::optional<SimResult> try_direct_replay(const Schedule& schedule, const ProfileCosts& costs,
                                           const LinkModel& links, const SimOptions& options) {
  if (options.record_timeline || options.link_sharing != LinkSharing::fifo) return std::nullopt;
  if (options.overlap_share && !schedule.overlapped.empty()) return std::nullopt;
  // A tied embedding's exchange is a message between two stages' STEPs, a
  // data-parallel reduction a span on a stream of its own: the graph's.
  if (schedules::has_gradient_reductions(schedule)) return std::nullopt;
  DirectReplay replay(schedule, costs, links);
  if (!replay.read_programs(schedule)) return std::nullopt;
  replay.run(schedule);
  return replay.finish(schedule, options);
}

}  // namespace gpipe::sim
