// A scripted backend for the runtime's unit tests: exec::Worker instantiated
// with stages, a device and a link that compute nothing and record every call,
// so that a test can assert exactly which calls a worker made, in which order,
// with which data, and how it fails when one of them throws.
//
// Data is labels. A FakeTensor says who made it:
//   F(s,m) of step t returns "sFm@t" (e.g. "0F1@2"), value 1000 t + 10 s + m
//   (the loss stage's value is its micro-batch's summed loss);
//   B(s,m) of step t returns "sBm@t", I(s,m) "sIm@t" (W returns nothing);
//   an upload is recognised by its content, against the run's synthetic data:
//   "xm@t" (the inputs of micro-batch m), "ym@t" (its targets), "dl[b]@t" (b
//   loss gradients of 1/N each), and "unknown upload k@t" for anything else.
// A stage knows its step by counting its STEPs.
//
// CallLog keeps, per rank, what the rank's stages and link were asked to do,
// in order, in the schedule's text form: "1F0(0F0@0, y0@0)" is F(1,0) with
// input 0F0@0 and target y0@0; "0DROP1" is drop_to_boundary after 0F1;
// "0SEND_F0(0F0@0 to 1)", "1RECV_F0(0F0@0 from 0)" are link calls.
//
// WorkerHarness runs one Worker<FakeBackend> per rank on real threads, with a
// real RunControl, StepBarrier and MemoryLog, a RecordingTimer and the
// scripted link; a hang guard fails the run after 60 s instead of hanging
// the test.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/link.hpp"
#include "exec/runtime/mailboxes.hpp"
#include "exec/layers/memory_account.hpp"
#include "exec/runtime/memory_log.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/run_settings.hpp"
#include "exec/runtime/step_barrier.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "exec/runtime/tensor.hpp"
#include "exec/runtime/train_options.hpp"
#include "exec/runtime/worker.hpp"
#include "models/model_spec.hpp"
#include "schedules/generate.hpp"

namespace gpipe::exec::fake {

using schedules::Rank;

// How long a test waits for something that must happen before it calls the
// run hung: a guard against a hang, never a measurement.
inline constexpr std::chrono::seconds kHangGuard{60};

struct FakeTensor {
  std::string label;  // who made it; empty: no tensor
  double value = 0;
  [[nodiscard]] bool empty() const { return label.empty(); }
  [[nodiscard]] std::int64_t bytes() const { return empty() ? 0 : 4; }
};

// What a receive yields: its own type, so that the worker must go through
// the device's local() and ready() to turn one into the other.
struct FakeMessage {
  FakeTensor tensor;
};

// One call a rank's stages or link received.
struct Call {
  std::string action;  // "1F0", "1DROP0", "0SEND_F0", ...
  std::string input;   // F, B: the input's label; SEND, RECV: the payload's
  std::string target;  // F, R on the loss stage: the target's label
  int peer = -1;       // SEND: to; RECV: from
  std::optional<MessageTag> tag;  // SEND, RECV
  int slot = -1;                  // SEND, RECV: the mark's measured step
  int index = -1;                 // SEND, RECV: the mark's index into the program

  // A stage's call: its action, its input's label, its target's.
  [[nodiscard]] static Call compute(std::string action, std::string input = "", std::string target = "") {
    Call c;
    c.action = std::move(action);
    c.input = std::move(input);
    c.target = std::move(target);
    return c;
  }
  // A link's call for `mark`: the payload's label, the peer rank, the tag.
  [[nodiscard]] static Call comm(const ActionMark& mark, std::string payload, Rank peer, const MessageTag& tag) {
    Call c;
    c.action = to_string(mark.action);
    c.input = std::move(payload);
    c.peer = peer.value;
    c.tag = tag;
    c.slot = mark.slot;
    c.index = static_cast<int>(mark.index);
    return c;
  }

  // The compact form of the header comment.
  [[nodiscard]] std::string text() const {
    if (tag) {
      const bool send = action.find("SEND") != std::string::npos;
      return fmt::format("{}({} {} {})", action, input, send ? "to" : "from", peer);
    }
    if (input.empty() && target.empty()) return action;
    if (target.empty()) return fmt::format("{}({})", action, input);
    if (input.empty()) return fmt::format("{}({})", action, target);
    return fmt::format("{}({}, {})", action, input, target);
  }
};

inline std::ostream& operator<<(std::ostream& os, const Call& call) { return os << call.text(); }

// Per rank, the calls in the order they came. Each rank's calls come from its
// worker's thread; the lock lets a test read while a run is blocked.
class CallLog {
 public:
  explicit CallLog(int num_ranks) : calls_(static_cast<std::size_t>(num_ranks)) {}

  void add(Rank rank, Call call) {
    std::scoped_lock lock(mutex_);
    calls_.at(rank.at()).push_back(std::move(call));
  }
  [[nodiscard]] std::vector<Call> calls(Rank rank) const {
    std::scoped_lock lock(mutex_);
    return calls_.at(rank.at());
  }
  [[nodiscard]] std::vector<std::string> texts(Rank rank) const {
    std::vector<std::string> out;
    for (const Call& c : calls(rank)) out.push_back(c.text());
    return out;
  }
  // Only the action column: the order of the calls.
  [[nodiscard]] std::vector<std::string> actions(Rank rank) const {
    std::vector<std::string> out;
    for (const Call& c : calls(rank)) out.push_back(c.action);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::vector<Call>> calls_;
};

struct StageScript {
  std::string throw_at;  // "1B0", "1STEP", "1DROP0": that call throws...
  std::string throw_message = "scripted failure";  // ...a std::runtime_error with this message,
  bool throw_non_std = false;                      // or an int
  std::optional<std::string> non_finite_gradient;  // what non_finite_gradient() names
  bool empty_input_gradient = false;               // B returns no tensor (token ids as input)
};

// Bytes a stage's F stashes per micro-batch, what stays after
// drop_to_boundary, and what I leaves for W: 100 (s + 1), 10 (s + 1) and
// 40 (s + 1), charged to its rank's account.
inline std::int64_t stash_bytes(int stage) { return 100 * (stage + 1); }
inline std::int64_t boundary_bytes(int stage) { return 10 * (stage + 1); }
inline std::int64_t weight_stash_bytes(int stage) { return 40 * (stage + 1); }

class ScriptedStage {
 public:
  ScriptedStage(Rank rank, int stage, bool is_last, int num_microbatches, CallLog& log,
                MemoryAccount* account)
      : rank_(rank),
        stage_(stage),
        is_last_(is_last),
        held_(static_cast<std::size_t>(num_microbatches), 0),
        log_(log),
        account_(account) {}

  StageScript script;

  [[nodiscard]] bool is_last() const { return is_last_; }

  // The worker names each step's samples; the script draws nothing from them.
  void start_step(int /*step*/, const std::vector<std::int64_t>& /*first_samples*/) {}

  [[nodiscard]] FakeTensor forward(int m, FakeTensor input, const FakeTensor* target) {
    const std::string action = name("F", m);
    log_.add(rank_, Call::compute(action, input.label, target ? target->label : ""));
    maybe_throw(action);
    charge(m, stash_bytes(stage_));
    return {fmt::format("{}@{}", action, steps_),
            1000.0 * steps_ + 10.0 * stage_ + static_cast<double>(m)};
  }

  void drop_to_boundary(int m) {
    const std::string action = name("DROP", m);
    log_.add(rank_, Call::compute(action));
    maybe_throw(action);
    charge(m, boundary_bytes(stage_) - held_.at(static_cast<std::size_t>(m)));
  }

  void recompute(int m, const FakeTensor* target) {
    const std::string action = name("R", m);
    log_.add(rank_, Call::compute(action, "", target ? target->label : ""));
    maybe_throw(action);
    charge(m, stash_bytes(stage_) - held_.at(static_cast<std::size_t>(m)));
  }

  [[nodiscard]] FakeTensor backward(int m, const FakeTensor& grad_output) {
    const std::string action = name("B", m);
    log_.add(rank_, Call::compute(action, grad_output.label));
    maybe_throw(action);
    charge(m, -held_.at(static_cast<std::size_t>(m)));
    if (script.empty_input_gradient) return {};
    return {fmt::format("{}@{}", action, steps_), 0};
  }

  [[nodiscard]] FakeTensor input_backward(int m, const FakeTensor& grad_output) {
    const std::string action = name("I", m);
    log_.add(rank_, Call::compute(action, grad_output.label));
    maybe_throw(action);
    charge(m, weight_stash_bytes(stage_) - held_.at(static_cast<std::size_t>(m)));
    if (script.empty_input_gradient) return {};
    return {fmt::format("{}@{}", action, steps_), 0};
  }

  void weight_backward(int m) {
    const std::string action = name("W", m);
    log_.add(rank_, Call::compute(action));
    maybe_throw(action);
    charge(m, -held_.at(static_cast<std::size_t>(m)));
  }

  // (No fake model ties a matrix: `partner` is always null, and no worker asks for a copy.)
  [[nodiscard]] FakeTensor tied_gradient_copy() { throw std::logic_error("the fake stage has no tied embedding"); }
  // (Nor does any fake run reduce over replicas.)
  [[nodiscard]] std::vector<FakeTensor*> gradients() { throw std::logic_error("the fake stage has no replicas"); }
  [[nodiscard]] std::vector<FakeTensor*> values() { throw std::logic_error("the fake stage has no replicas"); }
  void step(const FakeTensor* partner = nullptr) {
    if (partner != nullptr) throw std::logic_error("the fake stage has no tied embedding");
    const std::string action = fmt::format("{}STEP", stage_);
    log_.add(rank_, Call::compute(action));
    maybe_throw(action);
    ++steps_;
  }

  [[nodiscard]] std::optional<std::string> non_finite_gradient() const {
    return script.non_finite_gradient;
  }

  // After a failed run (Stage::drop_stashes): every micro-batch's bytes go.
  void drop_stashes() noexcept {
    ++stash_drops_;
    for (std::size_t m = 0; m < held_.size(); ++m) charge(static_cast<int>(m), -held_[m]);
  }
  [[nodiscard]] int stash_drops() const { return stash_drops_; }

 private:
  [[nodiscard]] std::string name(const char* kind, int m) const {
    return fmt::format("{}{}{}", stage_, kind, m);
  }
  void maybe_throw(const std::string& action) const {
    if (action != script.throw_at) return;
    if (script.throw_non_std) throw 42;
    throw std::runtime_error(script.throw_message);
  }
  void charge(int m, std::int64_t delta) {
    held_.at(static_cast<std::size_t>(m)) += delta;
    if (account_ == nullptr) return;
    if (delta > 0) account_->charge(delta);
    if (delta < 0) account_->refund(-delta);
  }

  Rank rank_;
  int stage_;
  bool is_last_;
  int steps_ = 0;
  int stash_drops_ = 0;
  std::vector<std::int64_t> held_;  // bytes per micro-batch
  CallLog& log_;
  MemoryAccount* account_;
};

struct DeviceScript {
  // "enter_thread", "upload", "data_ready", "finish_step", "sum": that call,
  // in step `throw_at_step`, throws a std::runtime_error with `throw_message`.
  std::string throw_in;
  int throw_at_step = 0;
  std::string throw_message = "scripted device failure";
  bool all_finite = true;  // what all_finite() answers
};

// A rank's device. Touched by its worker's thread only; a test reads it
// after the worker has stopped.
class FakeDevice {
 public:
  explicit FakeDevice(const RunSettings& settings)
      : settings_(settings), task_(*settings.model, settings.seed) {}

  DeviceScript script;

  void enter_thread() {
    event("enter_thread");
    maybe_throw("enter_thread", 0);
  }

  [[nodiscard]] FakeTensor upload(exec::Tensor host) {
    maybe_throw("upload", data_steps_);
    std::string label = recognise(host);
    event("upload " + label);
    return {std::move(label), 0};
  }

  void data_ready() {
    event("data_ready");
    maybe_throw("data_ready", data_steps_);
    ++data_steps_;
    uploads_in_step_ = 0;
  }

  [[nodiscard]] FakeTensor ready(FakeMessage message) { return std::move(message.tensor); }
  [[nodiscard]] FakeMessage local(FakeTensor tensor) { return {std::move(tensor)}; }

  [[nodiscard]] bool all_finite(const FakeTensor& tensor) const {
    event("all_finite " + tensor.label);
    return script.all_finite;
  }

  [[nodiscard]] double sum(const FakeTensor& tensor) const {
    event("sum " + tensor.label);
    maybe_throw("sum", finished_steps_ - 1);
    return tensor.value;
  }

  void finish_step(RunControl& /*control*/) {
    event("finish_step");
    maybe_throw("finish_step", finished_steps_);
    ++finished_steps_;
  }

  void drain() noexcept { event("drain"); }

  // Every call, in order: "enter_thread", "upload x0@0", "data_ready",
  // "all_finite 1F0@0", "finish_step", "sum 1F0@0", "drain".
  [[nodiscard]] const std::vector<std::string>& events() const { return events_; }

 private:
  void event(std::string text) const { events_.push_back(std::move(text)); }
  void maybe_throw(const char* call, int step) const {
    if (script.throw_in == call && script.throw_at_step == step) throw std::runtime_error(script.throw_message);
  }

  // Which of this step's synthetic tensors `host` is, by its values.
  [[nodiscard]] std::string recognise(const exec::Tensor& host) {
    const int t = data_steps_;
    const int k = uploads_in_step_++;
    if (!batch_ || batch_step_ != t) {
      batch_ = task_.batch(t, settings_.batch);
      batch_step_ = t;
    }
    const auto same = [](const exec::Tensor& a, const exec::Tensor& b) {
      return a.shape() == b.shape() && std::equal(a.f32().begin(), a.f32().end(), b.f32().begin());
    };
    for (std::size_t m = 0; m < settings_.microbatch_sizes.size(); ++m) {
      const std::int64_t offset = settings_.microbatch_offsets[m];
      const int b = settings_.microbatch_sizes[m];
      if (same(host, batch_->inputs.slice_rows(offset, b))) return fmt::format("x{}@{}", m, t);
      if (same(host, batch_->targets.slice_rows(offset, b))) return fmt::format("y{}@{}", m, t);
    }
    const float scale = 1.0F / static_cast<float>(settings_.batch);
    const auto values = host.f32();
    const bool all_scale = std::all_of(values.begin(), values.end(), [&](float v) { return v == scale; });
    if (host.shape().size() == 1 && all_scale) {
      return fmt::format("dl[{}]@{}", host.numel(), t);
    }
    return fmt::format("unknown upload {}@{}", k, t);
  }

  const RunSettings& settings_;
  SyntheticTask task_;
  std::optional<Batch> batch_;
  int batch_step_ = -1;
  int data_steps_ = 0;      // data_ready() calls so far
  int uploads_in_step_ = 0;
  int finished_steps_ = 0;  // finish_step() calls so far
  mutable std::vector<std::string> events_;
};

// The link: exec::Mailboxes underneath, every send and receive logged. A
// receive named by hold() blocks until abort(), whatever was sent.
class ScriptedLink final : public Link<FakeTensor, FakeMessage> {
 public:
  ScriptedLink(int num_ranks, CallLog& log) : mailboxes_(num_ranks), log_(log) {}

  void send(Rank from, Rank to, const MessageTag& tag, FakeTensor tensor, const ActionMark& mark) override {
    log_.add(from, Call::comm(mark, tensor.label, to, tag));
    mailboxes_.post(from, to, tag, {std::move(tensor)});
  }

  [[nodiscard]] FakeMessage receive(Rank to, Rank from, const MessageTag& tag, const ActionMark& mark) override {
    const std::string action = to_string(mark.action);
    bool held = false;
    {
      std::scoped_lock lock(mutex_);
      receiving_.insert(action);
      held = held_.count(action) > 0;
    }
    changed_.notify_all();
    if (held) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return aborted_; });
      throw Aborted();
    }
    FakeMessage message = mailboxes_.take(to, from, tag);
    log_.add(to, Call::comm(mark, message.tensor.label, from, tag));
    return message;
  }

  void abort() override {
    {
      std::scoped_lock lock(mutex_);
      aborted_ = true;
      ++aborts_;
    }
    changed_.notify_all();
    mailboxes_.abort();
  }

  void finish_abort() override { finish_aborts_.fetch_add(1); }

  // The receive of `action` ("1RECV_F0") blocks until abort(). Before the run.
  void hold(const std::string& action) {
    std::scoped_lock lock(mutex_);
    held_.insert(action);
  }

  // Waits until a worker has entered the receive of `action`; false after the hang guard.
  [[nodiscard]] bool wait_until_receiving(const std::string& action) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kHangGuard, [&] { return receiving_.count(action) > 0; });
  }

  [[nodiscard]] int aborts() const {
    std::scoped_lock lock(mutex_);
    return aborts_;
  }
  [[nodiscard]] int finish_aborts() const { return finish_aborts_.load(); }
  [[nodiscard]] std::size_t pending() const { return mailboxes_.pending(); }

 private:
  Mailboxes<FakeMessage> mailboxes_;
  CallLog& log_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::set<std::string> held_;
  std::set<std::string> receiving_;
  bool aborted_ = false;
  int aborts_ = 0;
  std::atomic<int> finish_aborts_{0};
};

// Records what the worker asks of its timer, per rank: "start 1" (measured
// step slot 1 starts), "begin 1 #3 0B0" / "end 1 #3 0B0" (slot, index into
// the program, action).
class RecordingTimer final : public ActionTimer {
 public:
  explicit RecordingTimer(int num_ranks) : events_(static_cast<std::size_t>(num_ranks)) {}

  void start_step(Rank rank, int slot, Clock::time_point start) override {
    std::scoped_lock lock(mutex_);
    events_.at(rank.at()).push_back(fmt::format("start {}", slot));
    starts_[{rank.value, slot}] = start;
  }
  void begin(const ActionMark& mark) override { add(mark, "begin"); }
  void end(const ActionMark& mark) override { add(mark, "end"); }
  [[nodiscard]] MeasuredIntervals intervals(int /*slot*/) override { return {}; }
  [[nodiscard]] const char* name() const override { return "recording"; }

  [[nodiscard]] std::vector<std::string> events(Rank rank) const {
    std::scoped_lock lock(mutex_);
    return events_.at(rank.at());
  }
  // (rank, slot) -> the start the worker passed.
  [[nodiscard]] std::map<std::pair<int, int>, Clock::time_point> starts() const {
    std::scoped_lock lock(mutex_);
    return starts_;
  }

 private:
  void add(const ActionMark& mark, const char* what) {
    std::scoped_lock lock(mutex_);
    events_.at(mark.rank.at())
        .push_back(fmt::format("{} {} #{} {}", what, mark.slot, mark.index, to_string(mark.action)));
  }

  mutable std::mutex mutex_;
  std::vector<std::vector<std::string>> events_;
  std::map<std::pair<int, int>, Clock::time_point> starts_;
};

// A worker's backend (WorkerBackend, exec/runtime/training_backend.hpp) and
// nothing more: no math, no run.
struct FakeBackend {
  using Tensor = FakeTensor;
  using Message = FakeMessage;
  using Stage = ScriptedStage;
  using RankDevice = FakeDevice;
};

// TrainOptions of a run of model mlp:layers=3,hidden=4 through a generated
// schedule (K stages, M micro-batches, N samples); steps 1, seed 7.
inline TrainOptions options(const std::string& schedule, int stages, int microbatches,
                            std::int64_t batch,
                            schedules::RecomputePolicy recompute = schedules::RecomputePolicy::never) {
  TrainOptions o;
  o.model = models::parse_model("mlp:layers=3,hidden=4");
  schedules::ScheduleOptions s;
  s.num_ranks = stages;
  s.num_microbatches = microbatches;
  s.recompute = recompute;
  o.schedule = schedules::generate(schedule, s);
  o.batch = batch;
  o.seed = 7;
  return o;
}

// Workers of every rank of `options` (lowered as the trainer does), each
// with its rank's scripted stages and device, on threads of their own.
class WorkerHarness {
 public:
  explicit WorkerHarness(TrainOptions options)
      : options_(std::move(options)),
        lowered_(lower_checked(options_)),
        settings_(make_run_settings(options_, lowered_)),
        log_(lowered_.num_ranks),
        link_(lowered_.num_ranks, log_),
        timer_(lowered_.num_ranks),
        barrier_(lowered_.num_ranks),
        control_(lowered_.num_ranks) {
    for (int r = 0; r < lowered_.num_ranks; ++r) {
      memory_.push_back(std::make_unique<MemoryLog>(Rank{r}));
      accounts_.push_back(std::make_unique<MemoryAccount>());
      accounts_.back()->set_observer([log = memory_.back().get()](std::int64_t bytes) { log->record(bytes); });
      devices_.push_back(std::make_unique<FakeDevice>(settings_));
    }
    for (int s = 0; s < lowered_.num_stages; ++s) {
      const Rank r = lowered_.rank_of(schedules::Stage{s});
      stages_.push_back(std::make_unique<ScriptedStage>(r, s, s + 1 == lowered_.num_stages,
                                                        lowered_.num_microbatches, log_,
                                                        accounts_[r.at()].get()));
    }
    control_.add_abort_hook([this] { link_.abort(); });
    control_.add_abort_hook([this] { barrier_.abort(); });
  }

  WorkerHarness(const WorkerHarness&) = delete;
  WorkerHarness& operator=(const WorkerHarness&) = delete;

  ~WorkerHarness() {
    if (!threads_.empty()) {
      control_.fail("the test ended before its run");
      join();
    }
  }

  // Starts every rank's worker; scripts must be set before.
  void start() {
    for (int r = 0; r < lowered_.num_ranks; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      std::vector<ScriptedStage*> own(static_cast<std::size_t>(lowered_.num_stages), nullptr);
      for (int s = 0; s < lowered_.num_stages; ++s) {
        const auto si = static_cast<std::size_t>(s);
        if (lowered_.rank_of(schedules::Stage{s}).value == r) own[si] = stages_[si].get();
      }
      workers_.push_back(std::make_unique<Worker<FakeBackend>>(
          Rank{r}, settings_, std::move(own), *devices_[ri],
          WorkerServices<FakeBackend>{&link_, &control_, &barrier_, &timer_, memory_[ri].get()}));
    }
    for (auto& worker : workers_) threads_.emplace_back([w = worker.get()] { w->run(); });
    guard_ = std::thread([this] {
      std::unique_lock lock(guard_mutex_);
      if (!guard_cv_.wait_for(lock, kHangGuard, [&] { return joined_; })) {
        lock.unlock();
        control_.fail("the test's hang guard stopped the run");
      }
    });
  }

  // Waits for every worker to leave.
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    {
      std::scoped_lock lock(guard_mutex_);
      joined_ = true;
    }
    guard_cv_.notify_all();
    if (guard_.joinable()) guard_.join();
  }

  void run() {
    start();
    join();
  }

  // Polls (1 ms) until `done`; false after the hang guard.
  template <class F>
  [[nodiscard]] static bool eventually(F done) {
    const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  [[nodiscard]] const schedules::Schedule& lowered() const { return lowered_; }
  [[nodiscard]] const RunSettings& settings() const { return settings_; }
  [[nodiscard]] const std::vector<schedules::Action>& program(int rank) const {
    return lowered_.actions(Rank{rank});
  }
  [[nodiscard]] ScriptedStage& stage(int s) { return *stages_.at(static_cast<std::size_t>(s)); }
  [[nodiscard]] FakeDevice& device(int r) { return *devices_.at(static_cast<std::size_t>(r)); }
  [[nodiscard]] MemoryLog& memory(int r) { return *memory_.at(static_cast<std::size_t>(r)); }
  [[nodiscard]] MemoryAccount& account(int r) { return *accounts_.at(static_cast<std::size_t>(r)); }
  [[nodiscard]] CallLog& log() { return log_; }
  [[nodiscard]] ScriptedLink& link() { return link_; }
  [[nodiscard]] RecordingTimer& timer() { return timer_; }
  [[nodiscard]] RunControl& control() { return control_; }
  [[nodiscard]] std::string error() const { return control_.error().value_or("no error"); }
  [[nodiscard]] std::string describe_ranks() const { return control_.describe_ranks(lowered_.ranks); }

 private:
  TrainOptions options_;
  schedules::Schedule lowered_;
  RunSettings settings_;
  CallLog log_;
  ScriptedLink link_;
  RecordingTimer timer_;
  StepBarrier barrier_;
  RunControl control_;
  // Declared so that the stages (which charge the accounts, which report to
  // the logs) go first.
  std::vector<std::unique_ptr<MemoryLog>> memory_;
  std::vector<std::unique_ptr<MemoryAccount>> accounts_;
  std::vector<std::unique_ptr<ScriptedStage>> stages_;
  std::vector<std::unique_ptr<FakeDevice>> devices_;
  std::vector<std::unique_ptr<Worker<FakeBackend>>> workers_;
  std::vector<std::thread> threads_;
  std::thread guard_;
  std::mutex guard_mutex_;
  std::condition_variable guard_cv_;
  bool joined_ = false;
};

}  // namespace gpipe::exec::fake
