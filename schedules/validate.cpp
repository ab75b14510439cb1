#include "schedules/validate.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <unordered_map>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <fmt/format.h>

#include "base/error.hpp"
#include "schedules/dependencies.hpp"
#include "schedules/gradient_reduction.hpp"
#include "schedules/overlap.hpp"

namespace gpipe::schedules {
namespace {

using K = ActionKind;
using Kind = ScheduleError::Kind;

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = Graph::vertex_descriptor;
using Edge = Graph::edge_descriptor;

std::string at(Position p) { return fmt::format("rank {} step {}", p.rank.value, p.step); }

// Records the DFS tree and the first back edge, which closes a cycle through
// the tree path from the edge's target down to its source.
// Kahn's algorithm: true when every vertex can be ordered after its inputs.
bool is_acyclic(std::size_t vertices, const std::vector<std::pair<std::size_t, std::size_t>>& edges) {
  std::vector<std::size_t> begin(vertices + 1, 0);
  std::vector<std::size_t> in_degree(vertices, 0);
  for (const auto& [from, to] : edges) {
    ++begin[from + 1];
    ++in_degree[to];
  }
  for (std::size_t v = 0; v < vertices; ++v) begin[v + 1] += begin[v];
  std::vector<std::size_t> targets(edges.size());
  std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
  for (const auto& [from, to] : edges) targets[fill[from]++] = to;
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < vertices; ++v) {
    if (in_degree[v] == 0) ready.push_back(v);
  }
  std::size_t ordered = 0;
  while (!ready.empty()) {
    const std::size_t v = ready.back();
    ready.pop_back();
    ++ordered;
    for (std::size_t e = begin[v]; e < begin[v + 1]; ++e) {
      if (--in_degree[targets[e]] == 0) ready.push_back(targets[e]);
    }
  }
  return ordered == vertices;
}

struct CycleRecorder : boost::default_dfs_visitor {
  std::vector<Vertex>* parent;
  std::optional<Edge>* back;
  void tree_edge(Edge e, const Graph& g) const { (*parent)[boost::target(e, g)] = boost::source(e, g); }
  void back_edge(Edge e, const Graph& /*g*/) const {
    if (!*back) *back = e;
  }
};

class Checker {
 public:
  explicit Checker(const Schedule& s) : s_(s), lowered_(s.is_lowered()) {}

  std::vector<ScheduleError> run() {
    if (!check_header()) return std::move(errors_);
    check_actions();
    for (int st = 0; st < s_.num_stages; ++st) {
      for (int mb = 0; mb < s_.num_microbatches; ++mb) {
        check_work(Stage{st}, Microbatch{mb});
        check_order(Stage{st}, Microbatch{mb});
      }
      // Torch's files leave the optimizer step to the caller: STEP is optional,
      // but a schedule that has it needs it for every stage.
      if (lowered_ && has_step_ && !find(Stage{st}, K::STEP, Microbatch{0})) {
        add(Kind::missing, {},
            fmt::format("rank {}: missing {}STEP (the schedule is lowered)", s_.rank_of(Stage{st}).value, st));
      }
    }
    if (lowered_ && has_step_) check_gradient_reductions();
    check_comm();
    check_waits();
    check_overlaps();
    if (errors_.empty()) check_cycle();
    return std::move(errors_);
  }

 private:
  // A lowered schedule reduces the gradients of each stage that needs it
  // (gradient_reduction.hpp) before the STEPs.
  void check_gradient_reductions() {
    if (!has_gradient_reductions(s_)) return;
    for (int st = 0; st < s_.num_stages; ++st) {
      if (!reduces_gradients(s_, Stage{st})) continue;
      for (const K kind : {K::REDUCE_GRAD, K::WAIT_REDUCE_GRAD}) {
        if (find(Stage{st}, kind, Microbatch{0})) continue;
        const std::string why = tied_partner(s_, Stage{st})
                                    ? "its first and last stages share a matrix"
                                    : fmt::format("its gradients are reduced over {} replicas", s_.data_parallel);
        add(Kind::missing, {},
            fmt::format("rank {}: missing {} (the schedule is lowered and {})", s_.rank_of(Stage{st}).value,
                        to_string(Action{Stage{st}, kind, Microbatch{0}}), why));
      }
    }
  }

  void add(Kind kind, std::vector<Position> where, std::string message) {
    ++total_;
    if (errors_.size() < kMaxKeptErrors) errors_.push_back({kind, std::move(message), std::move(where)});
  }

 public:
  [[nodiscard]] std::size_t total() const { return total_; }

 private:
  std::optional<Position> find(Stage s, K kind, Microbatch m) const {
    auto it = index_.find(Action{s, kind, m});
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  const Action& action_at(Position p) const {
    return s_.ranks[p.rank.at()][static_cast<std::size_t>(p.step)];
  }
  std::string text_at(Position p) const { return to_string(action_at(p)); }
  static std::vector<Position> cells(std::optional<Position> p) {
    return p ? std::vector<Position>{*p} : std::vector<Position>{};
  }

  bool check_header() {
    auto bad = [&](std::string why) { add(Kind::bad_header, {}, "schedule header: " + why); };
    if (s_.num_ranks < 1) bad(fmt::format("num_ranks must be at least 1, got {}", s_.num_ranks));
    if (s_.num_stages < 1) bad(fmt::format("num_stages must be at least 1, got {}", s_.num_stages));
    if (s_.num_microbatches < 1) {
      bad(fmt::format("num_microbatches must be at least 1, got {}", s_.num_microbatches));
    }
    if (static_cast<int>(s_.ranks.size()) != s_.num_ranks) {
      bad(fmt::format("ranks has {} action lists but num_ranks is {}", s_.ranks.size(), s_.num_ranks));
    }
    if (static_cast<int>(s_.stage_to_rank.size()) != s_.num_stages) {
      bad(fmt::format("stage_to_rank has {} entries but num_stages is {}", s_.stage_to_rank.size(),
                      s_.num_stages));
    }
    std::vector<bool> owns(static_cast<std::size_t>(std::max(s_.num_ranks, 0)), false);
    for (std::size_t st = 0; st < s_.stage_to_rank.size(); ++st) {
      const Rank r = s_.stage_to_rank[st];
      if (r.value < 0 || r.value >= s_.num_ranks) {
        bad(fmt::format("stage_to_rank[{}] = {} is not a rank (num_ranks {})", st, r.value, s_.num_ranks));
      } else {
        owns[r.at()] = true;
      }
    }
    if (errors_.empty()) {
      for (std::size_t r = 0; r < owns.size(); ++r) {
        if (!owns[r]) bad(fmt::format("rank {} owns no stage in stage_to_rank", r));
      }
    }
    return errors_.empty();
  }

  // Why `a` cannot exist at all in this schedule, if it cannot.
  std::optional<std::string> impossible(const Action& a) const {
    const int st = a.stage.value;
    const int last = s_.num_stages - 1;
    if (st < 0 || st > last) {
      return fmt::format("names stage {} but the schedule has stages 0..{}", st, last);
    }
    if (is_stage_level(a.kind)) {
      if (a.microbatch.value != 0) {
        return fmt::format("has micro-batch {}; {} takes none", a.microbatch.value, to_string(a.kind));
      }
      return std::nullopt;
    }
    if (a.microbatch.value < 0 || a.microbatch.value >= s_.num_microbatches) {
      return fmt::format("names micro-batch {} but the schedule has micro-batches 0..{}",
                         a.microbatch.value, s_.num_microbatches - 1);
    }
    const bool to_next = s_.crosses_ranks(a.stage);
    const bool from_prev = st > 0 && s_.crosses_ranks(Stage{st - 1});
    switch (a.kind) {
      case K::SEND_F:
      case K::RECV_B:
      case K::WAIT_SEND_F:
        if (st == last) return std::string("the last stage has no next stage to exchange with");
        if (!to_next) return fmt::format("stage {} is on the same rank, nothing travels", st + 1);
        break;
      case K::RECV_F:
      case K::SEND_B:
      case K::WAIT_SEND_B:
        if (st == 0) return std::string("stage 0 has no previous stage to exchange with");
        if (!from_prev) return fmt::format("stage {} is on the same rank, nothing travels", st - 1);
        break;
      case K::R:
        if (s_.recompute == RecomputePolicy::never) return std::string("the recompute policy is never");
        if (s_.recompute == RecomputePolicy::full) {
          return std::string("the recompute policy is full, which rebuilds each checkpoint inside B");
        }
        break;
      default:
        break;
    }
    return std::nullopt;
  }

  // bad_action and duplicate; indexes every action that later checks can trust.
  void check_actions() {
    for (int r = 0; r < s_.num_ranks; ++r) {
      const auto& list = s_.actions(Rank{r});
      for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        const Position p{Rank{r}, i};
        const Action& a = list[static_cast<std::size_t>(i)];
        if (auto why = impossible(a)) {
          add(Kind::bad_action, {p}, fmt::format("{}: {} cannot exist: {}", at(p), to_string(a), *why));
          continue;
        }
        // Listed on the wrong rank, but present: it still counts, so that it is not also "missing".
        const Rank owner = s_.rank_of(a.stage);
        if (owner != p.rank) {
          add(Kind::bad_action, {p},
              fmt::format("{}: {} is listed on rank {} but stage {} runs on rank {}", at(p),
                          to_string(a), r, a.stage.value, owner.value));
        }
        has_step_ = has_step_ || a.kind == K::STEP;
        auto [it, inserted] = index_.try_emplace(a, p);
        // FSDP may gather a stage's parameters again after freeing them, so
        // housekeeping repeats; everything else is listed once.
        if (!inserted && !is_housekeeping(a.kind)) {
          add(Kind::duplicate, {it->second, p},
              fmt::format("{}: {} duplicates {} at {}", at(p), to_string(a), to_string(a), at(it->second)));
        }
      }
    }
  }

  // Every (s,m) needs F and either B or both I and W; lowered ones R per policy.
  void check_work(Stage s, Microbatch m) {
    const std::string owner = fmt::format("rank {}", s_.rank_of(s).value);
    auto name = [&](K kind) { return to_string(Action{s, kind, m}); };
    const auto f = find(s, K::F, m);
    const auto b = find(s, K::B, m);
    const auto i = find(s, K::I, m);
    const auto w = find(s, K::W, m);
    const auto r = find(s, K::R, m);
    const auto backward = b ? b : i;
    if (!f) {
      const auto user = backward ? backward : (w ? w : r);
      add(Kind::missing, cells(user),
          fmt::format("{}: missing {}{}", owner, name(K::F),
                      user ? fmt::format(" (needed by {} at {})", text_at(*user), at(*user)) : ""));
    }
    if (b && (i || w)) {
      const Position split = i ? *i : *w;
      add(Kind::duplicate, {*b, split},
          fmt::format("{}: {} mixes the full backward with the split {} at {}", at(*b), name(K::B),
                      text_at(split), at(split)));
    } else if (!b && !i && !w) {
      add(Kind::missing, cells(f),
          fmt::format("{}: missing {} (or {} and {}){}", owner, name(K::B), name(K::I), name(K::W),
                      f ? fmt::format(" for {} at {}", name(K::F), at(*f)) : ""));
    } else if (i && !w) {
      add(Kind::missing, {*i},
          fmt::format("{}: missing {}, the weight backward of {} at {}", owner, name(K::W), name(K::I), at(*i)));
    } else if (w && !i) {
      add(Kind::missing, {*w},
          fmt::format("{}: missing {}, the input backward of {} at {}", owner, name(K::I), name(K::W), at(*w)));
    }
    if (lowered_ && s_.recompute == RecomputePolicy::stage && !r) {
      add(Kind::missing, cells(backward),
          fmt::format("{}: missing {} (recompute stage){}", owner, name(K::R),
                      backward ? fmt::format(" before {} at {}", text_at(*backward), at(*backward)) : ""));
    }
  }

  // On one rank, F before everything else of (s,m), I before W, R before B/I.
  void check_order(Stage s, Microbatch m) {
    auto before = [&](std::optional<Position> x, std::optional<Position> y, std::string_view what) {
      if (x && y && x->rank == y->rank && x->step < y->step) {
        add(Kind::backward_before_forward, {*x, *y},
            fmt::format("{}: {} comes before its {} {} at step {}", at(*x), text_at(*x), what,
                        text_at(*y), y->step));
      }
    };
    const auto f = find(s, K::F, m);
    for (K kind : {K::R, K::B, K::I, K::W}) before(find(s, kind, m), f, "forward");
    before(find(s, K::W, m), find(s, K::I, m), "input backward");
    const auto r = find(s, K::R, m);
    before(find(s, K::B, m), r, "recompute");
    before(find(s, K::I, m), r, "recompute");
  }

  // SEND_F(s,m) pairs with RECV_F(s+1,m), SEND_B(s+1,m) with RECV_B(s,m), at every
  // boundary between ranks; a lowered schedule needs both pairs for every m.
  void check_comm() {
    for (int st = 0; st + 1 < s_.num_stages; ++st) {
      if (!s_.crosses_ranks(Stage{st})) continue;
      for (int mb = 0; mb < s_.num_microbatches; ++mb) {
        const Microbatch m{mb};
        check_pair({Stage{st}, K::SEND_F, m}, {Stage{st + 1}, K::RECV_F, m}, {Stage{st}, K::F, m});
        const Stage next{st + 1};
        check_pair({next, K::SEND_B, m}, {Stage{st}, K::RECV_B, m},
                   {next, find(next, K::I, m) ? K::I : K::B, m});
      }
    }
  }
  void check_pair(const Action& send, const Action& recv, const Action& producer) {
    const auto ps = find(send.stage, send.kind, send.microbatch);
    const auto pr = find(recv.stage, recv.kind, recv.microbatch);
    auto unmatched = [&](Position p, const Action& mine, const Action& other) {
      add(Kind::unmatched_comm, {p},
          fmt::format("{}: {} has no matching {} on rank {}", at(p), to_string(mine), to_string(other),
                      s_.rank_of(other.stage).value));
    };
    if (ps && !pr) unmatched(*ps, send, recv);
    if (pr && !ps) unmatched(*pr, recv, send);
    if (!ps && !pr && lowered_) {
      const auto pp = find(producer.stage, producer.kind, producer.microbatch);
      add(Kind::missing, cells(pp),
          fmt::format("rank {}: missing {} and its receive {} on rank {} (the schedule is lowered)",
                      s_.rank_of(send.stage).value, to_string(send), to_string(recv),
                      s_.rank_of(recv.stage).value));
    }
  }

  // An overlapped pair stands side by side on one rank, forward first, and an
  // action is in one pair at most.
  void check_overlaps() {
    std::unordered_map<Action, const OverlapPair*> paired;
    for (const OverlapPair& pair : s_.overlapped) {
      const auto f = find(pair.forward.stage, pair.forward.kind, pair.forward.microbatch);
      const auto b = find(pair.backward.stage, pair.backward.kind, pair.backward.microbatch);
      if (!f || !b) continue;  // reported as missing
      for (const Action& a : {pair.forward, pair.backward}) {
        auto [it, added] = paired.try_emplace(a, &pair);
        if (!added) {
          const Position p = a == pair.forward ? *f : *b;
          add(Kind::duplicate, {p},
              fmt::format("{}: {} is in two overlapped pairs, {} and {}", at(p), to_string(a),
                          to_string(*it->second), to_string(pair)));
        }
      }
      if (f->rank != b->rank || b->step != f->step + 1) {
        add(Kind::bad_action, {*f, *b},
            fmt::format("{}: the overlapped pair {} does not stand side by side on one rank ({} is at {})",
                        at(*f), to_string(pair), to_string(pair.backward), at(*b)));
      }
    }
  }

  // A send wait needs its send, and a gradient-reduction wait a reduction of
  // its stage, earlier on the same rank: torch retires what is pending.
  void check_waits() {
    for (int r = 0; r < s_.num_ranks; ++r) {
      const auto& list = s_.actions(Rank{r});
      for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        const Action& a = list[static_cast<std::size_t>(i)];
        std::optional<Action> awaited;
        if (is_send_wait(a.kind)) {
          awaited = Action{a.stage, a.kind == K::WAIT_SEND_F ? K::SEND_F : K::SEND_B, a.microbatch};
        } else if (a.kind == K::WAIT_REDUCE_GRAD) {
          awaited = Action{a.stage, K::REDUCE_GRAD, a.microbatch};
        }
        if (!awaited) continue;
        const auto begin = list.begin();
        if (std::find(begin, begin + i, *awaited) == begin + i) {
          const Position p{Rank{r}, i};
          add(Kind::unmatched_comm, {p},
              fmt::format("{}: {} has no {} before it on rank {}", at(p), to_string(a), to_string(*awaited), r));
        }
      }
    }
  }

  // The dependency graph: program order on each rank (blocks_rank: a posted
  // receive holds up nothing after it) plus data edges, dep -> action.
  // A linear topological pass (Kahn's) decides whether it has a cycle; only
  // then does Boost.Graph's depth-first search find one to name.
  void check_cycle() {
    std::vector<Position> cell;
    std::vector<std::size_t> first;
    for (int r = 0; r < s_.num_ranks; ++r) {
      first.push_back(cell.size());
      for (int i = 0; i < static_cast<int>(s_.actions(Rank{r}).size()); ++i) cell.push_back({Rank{r}, i});
    }
    auto vertex = [&](Position p) { return first[p.rank.at()] + static_cast<std::size_t>(p.step); };
    bool via_comm = false;
    for (const auto& list : s_.ranks) {
      for (const Action& a : list) via_comm = via_comm || is_comm(a.kind);
    }
    const auto contains = [this](const Action& a) { return index_.contains(a); };
    std::vector<std::pair<std::size_t, std::size_t>> edges;  // (from, to)
    edges.reserve(cell.size() * 2);
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::size_t last_blocking = kNone;  // on the rank of cell[v]
    for (std::size_t v = 0; v < cell.size(); ++v) {
      if (cell[v].step == 0) last_blocking = kNone;
      if (last_blocking != kNone) edges.emplace_back(last_blocking, v);
      if (blocks_rank(action_at(cell[v]).kind)) last_blocking = v;
      for_each_dependency(s_, via_comm, action_at(cell[v]), contains, [&](const Action& d) {
        if (auto it = index_.find(d); it != index_.end()) edges.emplace_back(vertex(it->second), v);
      });
    }
    if (is_acyclic(cell.size(), edges)) return;
    Graph g(cell.size());
    for (const auto& [from, to] : edges) boost::add_edge(from, to, g);
    std::vector<Vertex> parent(cell.size());
    std::optional<Edge> back;
    boost::depth_first_search(g, boost::visitor(CycleRecorder{{}, &parent, &back}));
    if (!back) return;
    const Vertex head = boost::target(*back, g);
    std::vector<Vertex> loop;
    for (Vertex x = boost::source(*back, g); x != head; x = parent[x]) loop.push_back(x);
    loop.push_back(head);
    std::reverse(loop.begin(), loop.end());
    std::string message = "deadlock:";
    std::vector<Position> where;
    for (Vertex x : loop) {
      message += fmt::format(" {} ({}) ->", text_at(cell[x]), at(cell[x]));
      where.push_back(cell[x]);
    }
    message += " " + text_at(cell[head]);
    add(Kind::cycle, std::move(where), std::move(message));
  }

  const Schedule& s_;
  bool lowered_;
  bool has_step_ = false;  // the schedule lists STEP actions
  std::unordered_map<Action, Position> index_;  // first position of every possible action
  std::vector<ScheduleError> errors_;  // the first kMaxKeptErrors
  std::size_t total_ = 0;
};

}  // namespace

std::string_view to_string(ScheduleError::Kind kind) {
  constexpr std::array<std::string_view, 7> kNames = {
      "bad_header", "bad_action", "missing", "duplicate", "backward_before_forward", "unmatched_comm",
      "cycle"};
  return kNames[static_cast<std::size_t>(kind)];
}

std::vector<ScheduleError> find_errors(const Schedule& schedule, std::size_t* total) {
  Checker checker(schedule);
  std::vector<ScheduleError> errors = checker.run();
  if (total != nullptr) *total = checker.total();
  return errors;
}

void validate(const Schedule& schedule) {
  const auto errors = find_errors(schedule);
  if (!errors.empty()) throw InputError(errors.front().message);
}

}  // namespace gpipe::schedules
