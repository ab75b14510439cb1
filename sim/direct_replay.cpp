#include "sim/direct_replay.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "schedules/gradient_reduction.hpp"
#include "schedules/lower.hpp"
#include "schedules/overlap.hpp"
#include "schedules/tied_gradient.hpp"
#include "sim/activation_memory.hpp"
#include "sim/huge_page_allocator.hpp"
#include "sim/stage_links.hpp"
#include "sim/stage_prices.hpp"
#include "timelines/metrics.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;

constexpr std::int64_t kNotYet = -1;  // an arrival time not yet known

class DirectReplay {
 public:
  // `prices` must hold the schedule's stages and micro-batches (prices_schedule).
  DirectReplay(const Schedule& s, StagePrices prices, const LinkModel& links)
      : num_stages_(static_cast<std::size_t>(s.num_stages)),
        num_microbatches_(static_cast<std::size_t>(s.num_microbatches)),
        reduces_(s.data_parallel > 1),
        layout_(link_layout(s)),
        prices_(std::move(prices)) {
    price_messages(s, links);
    const auto ranks = static_cast<std::size_t>(s.num_ranks);
    next_.resize(ranks);
    rank_end_.resize(ranks);
    rank_free_.assign(ranks, 0);
    memory_.assign(ranks, 0);
    peak_memory_.assign(ranks, 0);
    busy_.assign(ranks, 0);
    waiting_.assign(ranks, -1);
    next_added_.assign(ranks, 0);
    added_end_.assign(ranks, 0);
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
    if (reduces_) {
      reduce_stream_free_.assign(ranks, 0);
      reduced_at_.assign(num_stages_, kNotYet);
    }
  }

  // Reads the schedule once: false where a rank's list holds more than F, B,
  // I and W (R or STEP listed, comm actions, send waits, housekeeping: that
  // program is for the graph replay). Notes where lowering puts each R
  // (schedules::recomputes; before the pair, for the backward of an
  // overlapped pair, as for_each_compute_action in compute_program.hpp), and
  // marks its (stage, micro-batch), whose F needs to know at its end; and
  // with data parallelism each stage's REDUCE_GRAD, after its last backward
  // (after the pair, for one of an overlapped pair).
  bool read_programs(const Schedule& s) {
    const bool may_recompute = s.recompute != schedules::RecomputePolicy::never;
    // Pairs move only an R and a REDUCE_GRAD, so without either their index is not needed.
    const bool adds = may_recompute || reduces_;
    const schedules::OverlapIndex pairs = adds ? schedules::OverlapIndex(s) : schedules::OverlapIndex();
    if (adds) {
      // At most an R per action and a REDUCE_GRAD per stage: grown once.
      std::size_t actions = 0;
      for (const auto& list : s.ranks) actions += list.size();
      added_.reserve(actions + num_stages_);
    }
    for (int r = 0; r < s.num_ranks; ++r) {
      const auto rank = static_cast<std::size_t>(r);
      next_added_[rank] = added_.size();
      if (!(adds ? read_list<true>(s, r, may_recompute, pairs) : read_list<false>(s, r, false, pairs))) return false;
      added_end_[rank] = added_.size();
      rank_end_[rank] = static_cast<int>(s.ranks[rank].size());
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

  // Each boundary's two messages at each class's bytes, priced once.
  void price_messages(const Schedule& s, const LinkModel& links) {
    for (std::size_t i = 0; i < prices_.work.size(); ++i) {
      const std::size_t st = i % num_stages_;
      if (st + 1 == num_stages_ || layout_.forward[st] < 0) continue;  // none, or on one rank: free
      const schedules::Rank here = s.rank_of(schedules::Stage{static_cast<int>(st)});
      const schedules::Rank there = s.rank_of(schedules::Stage{static_cast<int>(st) + 1});
      WorkPrice& p = prices_.work[i];
      p.forward_message_ns = links.transfer_ns(here, there, p.boundary_bytes);
      p.backward_message_ns = links.transfer_ns(there, here, p.boundary_bytes);
    }
  }

  // One rank's list, for read_programs. kAdds: whether lowering may add to
  // it (recompute, data parallelism), apart so that a plain list's loop only
  // checks it.
  template <bool kAdds>
  bool read_list(const Schedule& s, int r, bool may_recompute, const schedules::OverlapIndex& pairs) {
    const std::vector<Action>& list = s.ranks[static_cast<std::size_t>(r)];
    const bool reduces = reduces_;  // (a local: the loop stores to members)
    const std::vector<Action> none;
    const schedules::ReductionPlaces places(s, reduces ? list : none);
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
      if constexpr (kAdds) {
        // (Each stage's reduction is on its own rank's stream: a stage on a
        // rank not its own, in an unvalidated list, is the graph's to place.)
        if (reduces && rank_of_stage_[a.stage.at()] != r) return false;
        int reduce_before = static_cast<int>(i) + 1;
        if (second_of_pair) {  // its R, if any, comes before the pair
          second_of_pair = false;
        } else {
          std::size_t backward = i;
          if (pairs.pair_at(list, i)) {
            backward = i + 1;
            second_of_pair = true;
            ++reduce_before;
          }
          if (may_recompute && schedules::is_input_backward(list[backward].kind) &&
              schedules::recomputes(s, schedules::Rank{r}, static_cast<int>(backward))) {
            const Action& b = list[backward];
            recomputed_[slot(b)] = 1;
            added_.push_back({static_cast<int>(i), Action{b.stage, ActionKind::R, b.microbatch}});
          }
        }
        // (Pushed in place order: a REDUCE_GRAD after action i - 1 before an R before action i.)
        if (reduces) {
          places.after(static_cast<int>(i), a.stage, [&](schedules::Stage st) {
            added_.push_back({reduce_before, Action{st, ActionKind::REDUCE_GRAD, schedules::Microbatch{0}}});
          });
        }
      }
    }
    return true;
  }

  // Runs the rank's program as far as its inputs allow; a rank that waits
  // names the arrival it waits for in waiting_. The program is the rank's
  // list with an R before each backward that recomputes (before the pair,
  // for the backward of an overlapped pair), with data parallelism each
  // stage's REDUCE_GRAD after its last backward and its WAIT_REDUCE_GRAD at
  // the end, and the STEP of each of its stages at the end, as
  // for_each_compute_action (compute_program.hpp) has it.
  void run_rank(const Schedule& s, int rank, std::vector<int>& runnable) {
    const auto r = static_cast<std::size_t>(rank);
    const std::vector<Action>& list = s.ranks[r];
    std::int64_t free = rank_free_[r];
    std::int64_t memory = memory_[r];
    std::int64_t peak = peak_memory_[r];
    std::int64_t busy = busy_[r];
    int at = next_[r];
    const int end = rank_end_[r];
    std::size_t next_added = next_added_[r];
    const std::size_t added_end = added_end_[r];
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
      // What lowering adds before this action; each done once, whatever
      // the rank then waits for.
      for (; next_added < added_end && added_[next_added].place == at; ++next_added) {
        const Action& added = added_[next_added].action;
        if (added.kind == ActionKind::R) {
          const WorkPrice& price = prices_.at(added.stage.at(), added.microbatch.at());
          run_local(ActionKind::R, price.recompute_ns, price.memory);
        } else {
          run_local(ActionKind::REDUCE_GRAD, prices_.step[added.stage.at()].reduce_grad_ns, StageMemory{});
          start_reduction(r, added.stage.at(), free);
        }
      }
      const Action a = list[i];
      const std::size_t st = a.stage.at();
      const std::size_t here = slot(a);
      const WorkPrice& price = prices_.at(st, a.microbatch.at());
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
      // F sends its activation on, B or I its gradient back; the last
      // stage's F sends nothing (a gradient sent from it would hold the link
      // and could wake the stage below before its backward's is in).
      if (a.kind == ActionKind::F) {
        if (st + 1 < num_stages_) {
          send(st + 1, here + num_microbatches_, finish, layout_.forward[st], price.forward_message_ns,
               activation_in_, 2 * (here + num_microbatches_), runnable);
        }
      } else if (a.kind != ActionKind::W && st > 0) {
        const WorkPrice& below = prices_.at(st - 1, a.microbatch.at());
        send(st - 1, here - num_microbatches_, finish, layout_.backward[st - 1], below.backward_message_ns,
             gradient_in_, 2 * (here - num_microbatches_) + 1, runnable);
      }
    }
    next_[r] = at;
    next_added_[r] = next_added;
    rank_free_[r] = free;
    memory_[r] = memory;
    peak_memory_[r] = peak;
    busy_[r] = busy;
    if (at == end && !stepped_[r]) run_program_end(rank);
  }

  // The reduction REDUCE_GRAD(stage) starts at `at` on rank r's reduce
  // stream, after the one before there: a FIFO in the order started.
  void start_reduction(std::size_t r, std::size_t stage, std::int64_t at) {
    std::int64_t& stream = reduce_stream_free_[r];
    stream = std::max(at, stream) + prices_.step[stage].reduction_ns;
    reduced_at_[stage] = stream;
    makespan_ = std::max(makespan_, stream);
  }

  // What the rank's program ends with once its list has run: with data
  // parallelism the REDUCE_GRAD after its last action, if any, then in
  // stage order that of each stage with no backward in the list (none has
  // started its reduction), then each stage's WAIT_REDUCE_GRAD, which waits
  // for its reduction (both on this rank: no rank waits for another's);
  // then the STEP of each stage. None changes the activation memory.
  void run_program_end(int rank) {
    const auto r = static_cast<std::size_t>(rank);
    std::int64_t& free = rank_free_[r];
    std::int64_t& busy = busy_[r];
    const auto run = [&](std::int64_t duration) {
      busy += duration;
      free += duration;
      makespan_ = std::max(makespan_, free);
    };
    if (reduces_) {
      const auto reduce = [&](std::size_t st) {
        run(prices_.step[st].reduce_grad_ns);
        start_reduction(r, st, free);
      };
      for (std::size_t& k = next_added_[r]; k < added_end_[r]; ++k) reduce(added_[k].action.stage.at());
      for (std::size_t st = 0; st < num_stages_; ++st) {
        if (rank_of_stage_[st] == rank && reduced_at_[st] == kNotYet) reduce(st);
      }
      for (std::size_t st = 0; st < num_stages_; ++st) {
        if (rank_of_stage_[st] != rank) continue;
        free = std::max(free, reduced_at_[st]);
        run(prices_.step[st].wait_reduce_grad_ns);
      }
    }
    for (std::size_t st = 0; st < num_stages_; ++st) {
      if (rank_of_stage_[st] == rank) run(prices_.step[st].step_ns);
    }
    stepped_[r] = 1;
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
  bool reduces_;  // data parallelism: each stage's gradients reduced before its STEP
  LinkLayout layout_;
  StagePrices prices_;
  std::vector<int> rank_of_stage_;
  // What lowering adds to a rank's list, R(s, m) and REDUCE_GRAD(s): each
  // runs before the action at `place` (one past the last: at the end).
  struct Added {
    int place;
    Action action;
  };
  std::vector<Added> added_;  // rank after rank, in program order
  BigVector<std::int64_t> activation_in_;  // per (stage, micro-batch): when its input arrived
  BigVector<std::int64_t> gradient_in_;    // per (stage, micro-batch): when its output's gradient arrived
  BigVector<std::uint8_t> recomputed_;     // per (stage, micro-batch): 1 when R recomputes it
  std::vector<std::int64_t> link_free_;    // per link: when its last message arrives
  std::vector<int> next_, rank_end_;       // per rank: its next place in its list, one past its last
  std::vector<std::size_t> next_added_, added_end_;  // per rank: its next and its end in added_
  std::vector<std::int64_t> reduce_stream_free_;  // per rank: when its last reduction ends
  std::vector<std::int64_t> reduced_at_;          // per stage: when its reduction ends, or kNotYet
  std::vector<std::uint8_t> stepped_;      // per rank: 1 once its STEPs have run
  std::vector<std::int64_t> rank_free_, memory_, peak_memory_, busy_;
  std::vector<std::int64_t> waiting_;  // per rank: 2 x slot (+1 for a gradient) it waits for, or -1
  std::int64_t makespan_ = 0;
  timelines::ComputeTimeTotals compute_times_;
};

// Whether the table has a price for every stage and micro-batch of the schedule.
bool prices_schedule(const StagePrices& p, const Schedule& s) {
  const auto stages = static_cast<std::size_t>(s.num_stages);
  const auto microbatches = static_cast<std::size_t>(s.num_microbatches);
  if (p.num_stages != stages || p.step.size() != stages || p.class_of.size() < microbatches) return false;
  const std::size_t classes = stages == 0 ? 0 : p.work.size() / stages;
  return std::all_of(p.class_of.begin(), p.class_of.begin() + static_cast<std::ptrdiff_t>(microbatches),
                     [classes](std::uint32_t c) { return c < classes; });
}

}  // namespace

std::optional<SimResult> try_direct_replay(const Schedule& schedule, const CostModel& costs,
                                           const LinkModel& links, const SimOptions& options) {
  if (options.record_timeline || options.link_sharing != LinkSharing::fifo) return std::nullopt;
  if (options.overlap_share && !schedule.overlapped.empty()) return std::nullopt;
  // A tied embedding's exchange is a message between two ranks' reductions,
  // which the other rank's WAIT_REDUCE_GRAD waits for: the graph's.
  if (schedules::tied_partner(schedule, schedules::Stage{0})) return std::nullopt;
  // A model that prices action by action, or a table that misses some of
  // the schedule (for the graph replay to ask the model, and hear why).
  std::optional<StagePrices> prices = costs.stage_prices();
  if (!prices || !prices_schedule(*prices, schedule)) return std::nullopt;
  DirectReplay replay(schedule, std::move(*prices), links);
  if (!replay.read_programs(schedule)) return std::nullopt;
  replay.run(schedule);
  return replay.finish(schedule, options);
}

}  // namespace gpipe::sim
