// Where a validation's rounds are (gpipe-run validate, of training and of
// inference streams).
#pragma once

#include <cstdint>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "tools/common/progress.hpp"

namespace gpipe::tools {

// Where the rounds are, on stderr: an estimate of the whole when it is long
// and, on a terminal, a bar over every run of every round (tools/common/progress.hpp);
// in a log, a line as each round starts.
class RoundsProgress {
 public:
  explicit RoundsProgress(int rounds) : rounds_(rounds) {}

  void before_run(int round, int index, int count) {
    if (!progress_) {
      total_ = std::int64_t{rounds_} * count;
      progress_.emplace(total_, "runs", std::cerr, Progress::Options{.bar = stderr_is_terminal()}, start_);
    }
    if (!stderr_is_terminal() && index == 0) {
      std::cerr << fmt::format("validate: round {} of {}: {} configurations\n", round + 1, rounds_, count);
    }
    progress_->update(std::int64_t{round} * count + index);
  }
  // Before a row goes to stdout: the bar's line cleared, so the row stands alone.
  static void clear_bar() {
    if (stderr_is_terminal()) std::cerr << "\r\x1b[K" << std::flush;
  }

 private:
  int rounds_;
  std::int64_t total_ = 0;
  Progress::Clock::time_point start_ = Progress::Clock::now();
  std::optional<Progress> progress_;
};

}  // namespace gpipe::tools
