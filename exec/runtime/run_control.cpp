#include "exec/runtime/run_control.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "exec/runtime/aborted.hpp"

namespace gpipe::exec {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             RunControl::Clock::now().time_since_epoch())
      .count();
}

}  // namespace

RunControl::RunControl(int num_ranks)
    : ranks_(static_cast<std::size_t>(num_ranks)), last_progress_ns_(now_ns()) {
  out_of_memory_.reserve(kOutOfMemoryCapacity);
}

void RunControl::add_abort_hook(std::function<void()> hook) {
  std::scoped_lock lock(mutex_);
  hooks_.push_back(std::move(hook));
}

void RunControl::fail(const std::string& message) {
  std::vector<std::function<void()>> hooks;
  {
    std::scoped_lock lock(mutex_);
    if (error_) return;
    error_ = message;
    aborted_.store(true, std::memory_order_release);
    hooks = hooks_;
    changed();
  }
  for (const auto& hook : hooks) hook();
}

void RunControl::fail_out_of_memory(schedules::Rank rank, const schedules::Action* action) noexcept {
  std::scoped_lock lock(mutex_);
  if (error_) return;
  // "rank 12 ran out of memory in 12SEND_F123456", written into reserved room.
  std::string& m = out_of_memory_;
  m.clear();
  const auto append_int = [&m](long long v) {
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, v);
    if (ec == std::errc()) m.append(digits, static_cast<std::size_t>(end - digits));
  };
  m.append("rank ");
  append_int(rank.value);
  m.append(" ran out of memory");
  if (action != nullptr) {
    m.append(" in ");
    append_int(action->stage.value);
    const std::string_view kind = schedules::to_string(action->kind);
    m.append(kind.substr(0, std::min(kind.size(), kOutOfMemoryCapacity - m.size() - 24)));
    if (!schedules::is_stage_level(action->kind)) append_int(action->microbatch.value);
  }
  error_.emplace(std::move(m));
  aborted_.store(true, std::memory_order_release);
  changed();
  // In place, under the lock: copying the hooks could allocate. They only
  // wake waiters (the link, the step barrier) and never call back in here.
  for (const auto& hook : hooks_) hook();
}

void RunControl::throw_if_aborted() const {
  if (aborted()) throw Aborted();
}

std::optional<std::string> RunControl::error() const {
  std::scoped_lock lock(mutex_);
  return error_;
}

void RunControl::stall(schedules::Rank rank) {
  std::unique_lock lock(mutex_);
  ranks_.at(rank.at()).phase = Phase::stalled;
  changed_cv_.wait(lock, [&] { return aborted(); });
  throw Aborted();
}

void RunControl::enter_barrier(schedules::Rank rank, int step) {
  std::scoped_lock lock(mutex_);
  ranks_.at(rank.at()) = {Phase::barrier, step, 0};
}

void RunControl::enter_action(schedules::Rank rank, int step, int index) {
  std::scoped_lock lock(mutex_);
  ranks_.at(rank.at()) = {Phase::action, step, index};
}

void RunControl::exit_worker(schedules::Rank rank, bool completed) {
  std::scoped_lock lock(mutex_);
  ranks_.at(rank.at()).phase = completed ? Phase::completed : Phase::stopped;
  changed();
}

void RunControl::place_elsewhere(schedules::Rank rank) {
  std::scoped_lock lock(mutex_);
  ranks_.at(rank.at()).phase = Phase::elsewhere;
}

bool RunControl::waits_on_other_processes(const std::vector<std::vector<schedules::Action>>& programs) const {
  std::scoped_lock lock(mutex_);
  bool elsewhere = false;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankStatus& s = ranks_[r];
    if (s.phase == Phase::elsewhere) {
      elsewhere = true;
      continue;
    }
    if (s.phase == Phase::barrier) continue;
    if (s.phase != Phase::action) return false;
    const schedules::ActionKind kind = programs.at(r).at(static_cast<std::size_t>(s.index)).kind;
    if (kind != schedules::ActionKind::RECV_F && kind != schedules::ActionKind::RECV_B) return false;
  }
  return elsewhere;
}

void RunControl::note_progress() { last_progress_ns_.store(now_ns(), std::memory_order_relaxed); }

double RunControl::idle_seconds() const {
  return static_cast<double>(now_ns() - last_progress_ns_.load(std::memory_order_relaxed)) * 1e-9;
}

void RunControl::publish_loss(int step, double loss) {
  std::scoped_lock lock(mutex_);
  const auto i = static_cast<std::size_t>(step);
  if (losses_.size() <= i) losses_.resize(i + 1);
  losses_[i] = loss;
  changed();
}

void RunControl::changed() {
  ++changes_;
  changed_cv_.notify_all();
}

std::uint64_t RunControl::wait_for_change(std::uint64_t seen, Clock::duration timeout) {
  std::unique_lock lock(mutex_);
  changed_cv_.wait_for(lock, timeout, [&] { return changes_ != seen; });
  return changes_;
}

std::vector<double> RunControl::losses() const {
  std::scoped_lock lock(mutex_);
  std::vector<double> done;
  for (const auto& loss : losses_) {
    if (!loss) break;  // only the leading run of finished steps
    done.push_back(*loss);
  }
  return done;
}

bool RunControl::all_exited() const {
  std::scoped_lock lock(mutex_);
  for (const RankStatus& s : ranks_) {
    if (s.phase != Phase::completed && s.phase != Phase::stopped && s.phase != Phase::elsewhere) return false;
  }
  return true;
}

std::optional<std::string> RunControl::stopped_rank() const {
  std::scoped_lock lock(mutex_);
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r].phase == Phase::stopped) return fmt::format("rank {} (in step {})", r, ranks_[r].step);
  }
  return std::nullopt;
}

std::string RunControl::describe_ranks(
    const std::vector<std::vector<schedules::Action>>& programs) const {
  std::scoped_lock lock(mutex_);
  std::string text;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankStatus& s = ranks_[r];
    if (s.phase == Phase::elsewhere) continue;  // its own process says where it is
    if (!text.empty()) text += ", ";
    switch (s.phase) {
      case Phase::elsewhere:
        break;
      case Phase::not_started:
        text += fmt::format("rank {} has not started", r);
        break;
      case Phase::barrier:
        text += fmt::format("rank {} waits at the start of step {}", r, s.step);
        break;
      case Phase::action:
      case Phase::stalled: {
        const schedules::Action& a = programs.at(r).at(static_cast<std::size_t>(s.index));
        const bool receiving =
            a.kind == schedules::ActionKind::RECV_F || a.kind == schedules::ActionKind::RECV_B;
        text += fmt::format("rank {} {}in {}{}", r, receiving ? "waits " : "", to_string(a),
                            s.phase == Phase::stalled ? " (injected stall)" : "");
        break;
      }
      case Phase::completed:
        text += fmt::format("rank {} has finished", r);
        break;
      case Phase::stopped:
        text += fmt::format("rank {} has stopped", r);
        break;
    }
  }
  return text;
}

}  // namespace gpipe::exec
