#include "interop/torch_pipeline_timeline.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "interop/torch_steps.hpp"
#include "schedules/action.hpp"

namespace gpipe::interop {

namespace {

constexpr std::string_view kRuntimePrefix = "PP:";
// More stages or micro-batches than any run has: a label past them is refused.
constexpr int kMaxTraceStages = 1 << 16;
constexpr int kMaxMicrobatches = 1 << 24;

bool is_transfer_op(const KinetoEvent& e, std::string_view which) {
  return e.category == "cpu_op" && e.name == (which == "send" ? "c10d::send" : "c10d::recv_");
}
// The span of a transfer's bytes, from its post to its completion: gloo's, or
// NCCL's ("gloo:send"). Asked of every event near a post: no string is built.
bool is_transfer_span(const KinetoEvent& e, std::string_view which) {
  const std::string_view name = e.name;
  return name.size() == which.size() + 5 && (name.starts_with("gloo:") || name.starts_with("nccl:")) &&
         name.ends_with(which);
}
bool is_barrier_span(const KinetoEvent& e) { return e.name == "gloo:barrier" || e.name == "nccl:barrier"; }

// "Forward 3" -> 3; nullopt for anything else.
std::optional<int> numbered(std::string_view name, std::string_view word) {
  if (!name.starts_with(word) || name.size() <= word.size() + 1 || name[word.size()] != ' ') return std::nullopt;
  int value = 0;
  const std::string_view digits = name.substr(word.size() + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size() || value < 0 || value >= kMaxMicrobatches) {
    return std::nullopt;
  }
  return value;
}

struct Transfer {
  const KinetoEvent* op = nullptr;    // the post
  std::int64_t done_ns = 0;           // its span's end: the bytes complete
};

// One rank's step, in its own trace's ns.
struct RankStep {
  const KinetoTrace* trace = nullptr;
  int rank = 0;
  std::int64_t barrier_exit_ns = 0;      // base + ts
  std::int64_t barrier_duration_ns = 0;
  std::vector<const KinetoEvent*> labels;
  std::vector<Transfer> sends, receives;
  bool runtime = false;  // PP: labels (else Forward i / Backward i)
};

[[noreturn]] void fail(const KinetoTrace& t, std::string_view why) {
  throw InputError(fmt::format("{}: {}", t.origin, why));
}

// Each post of `which` ("send", "recv") on the step's thread, with the
// completion of the span that starts within it.
std::vector<Transfer> transfers(const KinetoTrace& t, std::int64_t from, std::int64_t to, const std::string& thread,
                                std::string_view which) {
  std::vector<Transfer> out;
  for (const KinetoEvent& e : t.events) {
    if (e.start_ns < from || e.start_ns > to || e.thread != thread || !is_transfer_op(e, which)) continue;
    // Sorted by start: the spans that start within the post follow it.
    auto span = std::ranges::lower_bound(t.events, e.start_ns, {}, &KinetoEvent::start_ns);
    while (span != t.events.end() && span->start_ns <= e.end_ns && !is_transfer_span(*span, which)) ++span;
    if (span == t.events.end() || span->start_ns > e.end_ns) {
      fail(t, fmt::format("the c10d::{} at {} us has no gloo:{} (or nccl:{}) span from its post to its completion",
                          which == "send" ? "send" : "recv_", e.start_ns / 1000, which, which));
    }
    out.push_back({&e, span->end_ns});
  }
  return out;
}

bool is_pipeline_label(const KinetoEvent& e) {
  return e.category == "user_annotation" &&
         (e.name.starts_with(kRuntimePrefix) || numbered(e.name, "Forward") || numbered(e.name, "Backward"));
}

// A step of one rank's trace: the events that start and end in [from, to],
// on `thread` when it is set (a ProfilerStep#N span's).
struct StepWindow {
  std::int64_t from = std::numeric_limits<std::int64_t>::min();
  std::int64_t to = std::numeric_limits<std::int64_t>::max();
  std::optional<std::string> thread;
};

// The rank's steps: its ProfilerStep#N spans; else, for a trace of several
// steps taken without prof.step(), a step from each recurrence of the rank's
// first pipeline label (PP:0F0, Forward 0, ...), the barrier and the
// optimizer between two steps falling in the later one; else one.
std::vector<StepWindow> rank_steps(const KinetoTrace& t) {
  std::vector<StepWindow> out;
  for (const KinetoEvent* e : profiler_step_spans(t)) out.push_back({e->start_ns, e->end_ns, e->thread});
  if (!out.empty()) return out;
  std::vector<const KinetoEvent*> labels;
  for (const KinetoEvent& e : t.events) {
    if (is_pipeline_label(e)) labels.push_back(&e);
  }
  out.push_back({});
  if (labels.empty()) return out;
  std::int64_t ended = std::numeric_limits<std::int64_t>::min();  // the latest end of a label before this one
  for (const KinetoEvent* e : labels) {
    if (e != labels.front() && e->name == labels.front()->name && e->thread == labels.front()->thread &&
        ended < e->start_ns) {
      out.back().to = ended;
      out.push_back({.from = ended + 1});
    }
    ended = std::max(ended, e->end_ns);
  }
  return out;
}

RankStep read_rank(const KinetoTrace& t, const StepWindow& window) {
  RankStep r;
  r.trace = &t;
  r.rank = *t.rank;
  const std::int64_t from = window.from;
  const std::int64_t to = window.to;
  for (const KinetoEvent& e : t.events) {
    if (e.category != "user_annotation" || e.start_ns < from || e.end_ns > to) continue;
    if (window.thread && e.thread != *window.thread) continue;
    if (is_pipeline_label(e)) {
      r.labels.push_back(&e);
      r.runtime = r.runtime || e.name.starts_with(kRuntimePrefix);
    }
  }
  if (r.labels.empty()) {
    fail(t, "no pipeline actions: torch.distributed.pipelining labels them PP:<action> (its schedule runtime) or "
            "Forward i / Backward i (ScheduleGPipe); Schedule1F1B labels none, so run it from its CSV "
            "(_dump_csv, then _load_csv) to get labels");
  }
  const std::int64_t first = r.labels.front()->start_ns;
  const KinetoEvent* barrier = nullptr;
  for (const KinetoEvent& e : t.events) {
    if (is_barrier_span(e) && e.end_ns <= first && e.start_ns >= from) barrier = &e;
  }
  if (barrier == nullptr) {
    fail(t, "no barrier before the step's first action: enter dist.barrier() before each step, the run's record of "
            "one moment on every rank's clock");
  }
  // Base times within [0, 2^61] and times within 1e18 ns (kineto_trace.cpp): these sums,
  // their differences and the shifts below stay within 64 bits.
  r.barrier_exit_ns = t.base_time_ns + barrier->end_ns;
  r.barrier_duration_ns = barrier->duration_ns();
  const std::string& thread = r.labels.front()->thread;
  r.sends = transfers(t, first, to, thread, "send");
  r.receives = transfers(t, first, to, thread, "recv");
  return r;
}

struct Built {
  std::vector<timelines::TimedAction> actions;
  std::map<std::string, int> left_out;  // kind -> count
};

// The transfers posted inside `label`.
std::vector<const Transfer*> inside(const KinetoEvent& label, const std::vector<Transfer>& all) {
  std::vector<const Transfer*> out;
  for (const Transfer& t : all) {
    if (label.start_ns <= t.op->start_ns && t.op->end_ns <= label.end_ns) out.push_back(&t);
  }
  return out;
}

std::int64_t latest_done(const std::vector<const Transfer*>& ts) {
  std::int64_t done = std::numeric_limits<std::int64_t>::min();
  for (const Transfer* t : ts) done = std::max(done, t->done_ns);
  return done;
}

// Times in the trace's ns; shifted to the common clock afterwards.
void runtime_actions(const RankStep& r, int num_stages, Built& out) {
  std::map<schedules::Action, std::int64_t> received;  // RECV -> the end of its bytes
  for (const KinetoEvent* label : r.labels) {
    if (!label->name.starts_with(kRuntimePrefix)) continue;  // a Forward i beside the runtime's labels
    schedules::Action a;
    try {
      a = schedules::parse_action(label->name.substr(kRuntimePrefix.size()));
    } catch (const InputError&) {
      std::string kind = label->name.substr(kRuntimePrefix.size());
      kind.erase(0, kind.find_first_not_of("0123456789"));
      kind.erase(kind.find_last_not_of("0123456789") + 1);
      ++out.left_out[kind];
      continue;
    }
    timelines::TimedAction t{a, schedules::Rank{r.rank}, timelines::stream_of(a.kind), label->start_ns, label->end_ns};
    if (a.kind == schedules::ActionKind::RECV_F || a.kind == schedules::ActionKind::RECV_B) {
      const auto posted = inside(*label, r.receives);
      if (!posted.empty()) t.end_ns = std::max(t.end_ns, latest_done(posted));
      received[a] = t.end_ns;
    } else if (a.kind == schedules::ActionKind::SEND_F || a.kind == schedules::ActionKind::SEND_B) {
      const auto posted = inside(*label, r.sends);
      if (!posted.empty()) t.end_ns = std::max(t.end_ns, latest_done(posted));
    } else if (a.kind == schedules::ActionKind::F || a.kind == schedules::ActionKind::B || a.kind == schedules::ActionKind::I) {
      // It waits for its message inside its label.
      const bool forward = a.kind == schedules::ActionKind::F;
      const schedules::Action awaited{a.stage, forward ? schedules::ActionKind::RECV_F : schedules::ActionKind::RECV_B, a.microbatch};
      const bool has_peer = forward ? a.stage.value > 0 : a.stage.value < num_stages - 1;
      if (const auto it = received.find(awaited); has_peer && it != received.end()) {
        t.start_ns = std::clamp(it->second, label->start_ns, label->end_ns);
      }
    }
    out.actions.push_back(t);
  }
}

// ScheduleGPipe: "Forward i" holds RECV_F i's post and wait, F i, SEND_F i's
// post; "Backward i" the same for B i. Rank r runs stage r of `num_stages`.
void gpipe_actions(const RankStep& r, int num_stages, Built& out) {
  const schedules::Stage s{r.rank};
  for (const KinetoEvent* label : r.labels) {
    const auto forward_mb = numbered(label->name, "Forward");
    const auto backward_mb = numbered(label->name, "Backward");
    if (!forward_mb && !backward_mb) continue;  // a PP: label beside them (not expected)
    const bool forward = forward_mb.has_value();
    const schedules::Microbatch m{forward ? *forward_mb : *backward_mb};
    timelines::TimedAction compute{schedules::Action{s, forward ? schedules::ActionKind::F : schedules::ActionKind::B, m}, schedules::Rank{r.rank}, timelines::Stream::compute,
                        label->start_ns, label->end_ns};
    const auto received = inside(*label, r.receives);
    const bool receives = forward ? s.value > 0 : s.value < num_stages - 1;
    if (receives && !received.empty()) {
      const std::int64_t done = std::clamp(latest_done(received), label->start_ns, label->end_ns);
      out.actions.push_back({schedules::Action{s, forward ? schedules::ActionKind::RECV_F : schedules::ActionKind::RECV_B, m}, schedules::Rank{r.rank},
                             timelines::Stream::recv, received.front()->op->start_ns, std::max(done, received.front()->op->start_ns)});
      compute.start_ns = done;
    }
    const auto sent = inside(*label, r.sends);
    const bool sends = forward ? s.value < num_stages - 1 : s.value > 0;
    if (sends && !sent.empty()) {
      compute.end_ns = std::max(compute.start_ns, std::min(compute.end_ns, sent.front()->op->start_ns));
      out.actions.push_back({schedules::Action{s, forward ? schedules::ActionKind::SEND_F : schedules::ActionKind::SEND_B, m}, schedules::Rank{r.rank},
                             timelines::Stream::send, sent.front()->op->start_ns, latest_done(sent)});
    }
    out.actions.push_back(compute);
  }
}


// One step of every rank's trace as a run: the clock, then the actions.
TorchPipelineRun one_step(const std::vector<RankStep>& ranks, int world) {
  // The clock.
  TorchPipelineRun run;
  std::int64_t earliest = std::numeric_limits<std::int64_t>::max(), latest = std::numeric_limits<std::int64_t>::min();
  bool one_host = true;
  for (const RankStep& r : ranks) {
    earliest = std::min(earliest, r.barrier_exit_ns);
    latest = std::max(latest, r.barrier_exit_ns);
    one_host = one_host && r.trace->host_name == ranks.front().trace->host_name;
  }
  std::vector<std::int64_t> offset(ranks.size(), 0);  // added to base + ts
  if (one_host && latest - earliest <= kMaxBarrierExitSpreadNs) {
    run.clock = {"one host's clock (the traces' base times)", 0, latest - earliest};
  } else {
    std::int64_t bound = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      offset[i] = ranks.front().barrier_exit_ns - ranks[i].barrier_exit_ns;
      bound = std::min(bound, ranks[i].barrier_duration_ns);
    }
    run.clock = {"barrier exits aligned", bound, 0};
  }

  // The actions, shifted so that rank 0's barrier exit is 0.
  Built built;
  int num_stages = 0;
  for (const RankStep& r : ranks) {
    for (const KinetoEvent* label : r.labels) {
      if (!r.runtime || !label->name.starts_with(kRuntimePrefix)) continue;
      schedules::Action a;
      try {
        a = schedules::parse_action(label->name.substr(kRuntimePrefix.size()));
      } catch (const InputError&) {
        continue;  // counted as left out below
      }
      if (a.stage.value >= kMaxTraceStages || a.microbatch.value >= kMaxMicrobatches) {
        fail(*r.trace, fmt::format("the label {} names a stage or micro-batch past any run's ({} stages, {} "
                                   "micro-batches at most)",
                                   label->name, kMaxTraceStages, kMaxMicrobatches));
      }
      num_stages = std::max(num_stages, a.stage.value + 1);
    }
  }
  if (ranks.front().runtime && num_stages == 0) {
    fail(*ranks.front().trace, "no PP: label is an action of gpipe's (such as PP:0F3 or PP:1SEND_B0)");
  }
  if (!ranks.front().runtime) num_stages = world;  // ScheduleGPipe: a stage a rank
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::size_t first = built.actions.size();
    if (ranks[i].runtime) {
      runtime_actions(ranks[i], num_stages, built);
    } else {
      gpipe_actions(ranks[i], num_stages, built);
    }
    const std::int64_t shift = ranks[i].trace->base_time_ns + offset[i] - ranks.front().barrier_exit_ns;
    for (std::size_t k = first; k < built.actions.size(); ++k) {
      built.actions[k].start_ns += shift;
      built.actions[k].end_ns += shift;
    }
  }
  for (const auto& [kind, count] : built.left_out) run.left_out.push_back(fmt::format("{} x{}", kind, count));

  timelines::TimelineInfo& info = run.timeline.info;
  info.schedule_name = ranks.front().runtime ? "torch runtime" : "gpipe";
  info.num_ranks = world;
  info.num_stages = num_stages;
  info.source = "torch";
  info.device = fmt::format("CPU ({})", ranks.front().trace->host_name.empty() ? "host unnamed"
                                                                                : ranks.front().trace->host_name);
  std::vector<std::optional<int>> rank_of(static_cast<std::size_t>(num_stages));
  for (const timelines::TimedAction& a : built.actions) {
    info.num_microbatches = std::max(info.num_microbatches, a.action.microbatch.value + 1);
    if (a.action.stage.value >= 0 && a.action.stage.value < num_stages) rank_of[a.action.stage.at()] = a.rank.value;
  }
  for (int s = 0; s < num_stages; ++s) {
    if (!rank_of[static_cast<std::size_t>(s)]) {
      throw InputError(fmt::format("--torch-traces: no rank ran stage {} of {}", s, num_stages));
    }
    info.stage_to_rank.emplace_back(*rank_of[static_cast<std::size_t>(s)]);
  }
  std::ranges::stable_sort(built.actions, [](const timelines::TimedAction& a, const timelines::TimedAction& b) {
    return a.rank.value != b.rank.value ? a.rank.value < b.rank.value : a.start_ns < b.start_ns;
  });
  run.timeline.actions = std::move(built.actions);
  timelines::check_no_overlap(run.timeline, "--torch-traces");
  return run;
}

}  // namespace

TorchPipelineRun torch_pipeline_run(const std::vector<KinetoTrace>& traces, const TorchRunOptions& options) {
  if (traces.empty()) throw InputError("--torch-traces: no trace given");
  std::map<int, const KinetoTrace*> by_rank;
  int world = 0;
  for (const KinetoTrace& t : traces) {
    if (!t.rank || !t.world_size) {
      fail(t, "no distributedInfo (rank and world_size): a trace of one rank of a torch.distributed run is needed");
    }
    world = std::max(world, *t.world_size);
    if (!by_rank.emplace(*t.rank, &t).second) {
      fail(t, fmt::format("rank {} is given twice (also {})", *t.rank, by_rank.at(*t.rank)->origin));
    }
  }
  for (int r = 0; r < world; ++r) {
    if (!by_rank.contains(r)) {
      throw InputError(fmt::format("--torch-traces: rank {}'s trace is missing (the run had {} ranks)", r, world));
    }
  }
  if (static_cast<int>(by_rank.size()) != world) {
    throw InputError(fmt::format("--torch-traces: {} traces for a run of {} ranks", by_rank.size(), world));
  }
  // Each rank's steps: as many on every rank (each step is a barrier and a schedule's run).
  std::vector<std::vector<StepWindow>> windows;
  for (const auto& [r, t] : by_rank) {
    windows.push_back(rank_steps(*t));
    if (windows.back().size() != windows.front().size()) {
      fail(*t, fmt::format("{} steps, where rank 0's trace has {}: trace the same steps on every rank",
                           windows.back().size(), windows.front().size()));
    }
  }
  const int count = static_cast<int>(windows.front().size());
  if (options.step && (*options.step < 1 || *options.step > count)) {
    throw InputError(fmt::format("--torch-step {}: the traces hold {} step{}; give 1 to {}", *options.step, count,
                                 count == 1 ? "" : "s", count));
  }
  // Every step read (a bad one is an error whichever is taken), its span kept.
  std::vector<TorchPipelineRun> runs;
  for (int k = 0; k < count; ++k) {
    std::vector<RankStep> ranks;
    std::size_t i = 0;
    for (const auto& [r, t] : by_rank) ranks.push_back(read_rank(*t, windows[i++][static_cast<std::size_t>(k)]));
    runs.push_back(one_step(ranks, world));
  }
  std::vector<std::int64_t> spans;
  for (const TorchPipelineRun& run : runs) {
    std::int64_t end = 0;
    for (const timelines::TimedAction& a : run.timeline.actions) end = std::max(end, a.end_ns);
    spans.push_back(end);
  }
  // The step asked for, else the median one (the lower of two middles).
  std::vector<int> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::ranges::stable_sort(order, {}, [&](int k) { return spans[static_cast<std::size_t>(k)]; });
  const int taken = options.step ? *options.step - 1 : order[static_cast<std::size_t>((count - 1) / 2)];
  TorchPipelineRun run = std::move(runs[static_cast<std::size_t>(taken)]);
  run.steps = count;
  run.step = taken + 1;
  run.step_spans_ns = std::move(spans);
  run.chosen = options.step ? "asked for" : count == 1 ? "the only one" : "the median";
  return run;
}

}  // namespace gpipe::interop
