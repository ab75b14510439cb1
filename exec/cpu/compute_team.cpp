#include "exec/cpu/compute_team.hpp"

#include <sched.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace gpipe::exec::cpu {

namespace {
thread_local ComputeTeam* current_team = nullptr;
}  // namespace

ComputeTeam::ComputeTeam(int size, SpinBudget spin) : size_(size), spin_(spin) {
  if (size < 1) throw std::invalid_argument(fmt::format("a compute team needs at least 1 thread, got {}", size));
  helpers_.reserve(static_cast<std::size_t>(size - 1));
  try {
    for (int i = 1; i < size; ++i) helpers_.emplace_back([this] { helper_loop(); });
  } catch (...) {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
    throw;
  }
}

ComputeTeam::~ComputeTeam() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void ComputeTeam::take_parts(const std::function<void(int)>& body, int parts) {
  while (true) {
    int part = 0;
    {
      const std::lock_guard lock(mutex_);
      if (next_part_ >= parts) return;
      part = next_part_++;
    }
    try {
      // Inside a part there is no team: a kernel the part calls runs on this
      // thread alone, and never calls run() of the team it is part of.
      const Scope alone(nullptr);
      body(part);
    } catch (...) {
      const std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    bool last = false;
    {
      const std::lock_guard lock(mutex_);
      last = --unfinished_ == 0;
    }
    if (last) done_.notify_all();
  }
}

void ComputeTeam::helper_loop() {
  std::uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* job = nullptr;
    int parts = 0;
    (void)spin_until([&] { return stop_.load() || generation_.load() != seen; }, spin_);
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      // A job already finished (its run() returned) is no job.
      if (job_ == nullptr || next_part_ >= parts_) continue;
      job = job_;
      parts = parts_;
      ++busy_helpers_;
    }
    take_parts(*job, parts);
    {
      const std::lock_guard lock(mutex_);
      --busy_helpers_;
    }
    done_.notify_all();
  }
}

void ComputeTeam::run(int parts, const std::function<void(int)>& body) {
  if (parts <= 0) return;
  if (parts == 1 || helpers_.empty()) {
    for (int part = 0; part < parts; ++part) body(part);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    job_ = &body;
    parts_ = parts;
    next_part_ = 0;
    unfinished_ = parts;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  take_parts(body, parts);
  (void)spin_until([&] { return unfinished_.load() == 0 && busy_helpers_.load() == 0; }, spin_);
  std::exception_ptr error;
  {
    // Every part finished, and no helper still holds this job: the next
    // run() may then replace it.
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return unfinished_ == 0 && busy_helpers_ == 0; });
    job_ = nullptr;
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

ComputeTeam* ComputeTeam::current() { return current_team; }

void ComputeTeam::enter_for_thread(ComputeTeam* team) { current_team = team; }

ComputeTeam::Scope::Scope(ComputeTeam* team) : previous_(current_team) { current_team = team; }

ComputeTeam::Scope::~Scope() { current_team = previous_; }

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
}

int default_threads_per_rank(int ranks_here) { return std::max(1, usable_cores() / std::max(1, ranks_here)); }

SpinBudget polling_budget(int threads) {
  return threads <= usable_cores() ? SpinBudget(20000) : SpinBudget::zero();
}

int parts_for(std::int64_t work, std::int64_t min_per_part) {
  const ComputeTeam* team = ComputeTeam::current();
  if (team == nullptr || team->size() == 1 || work <= 0) return 1;
  const std::int64_t most = std::max<std::int64_t>(1, work / std::max<std::int64_t>(1, min_per_part));
  return static_cast<int>(std::min<std::int64_t>(team->size(), most));
}

void split_ranges(std::int64_t count, int parts, const std::function<void(std::int64_t, std::int64_t)>& body) {
  ComputeTeam* team = ComputeTeam::current();
  if (parts <= 1 || team == nullptr || count <= 1) {
    body(0, count);
    return;
  }
  parts = static_cast<int>(std::min<std::int64_t>(parts, count));
  team->run(parts, [&](int part) {
    const std::int64_t begin = count * part / parts;
    const std::int64_t end = count * (part + 1) / parts;
    body(begin, end);
  });
}

}  // namespace gpipe::exec::cpu
