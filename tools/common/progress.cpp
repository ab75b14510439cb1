#include "tools/common/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpipe::tools {

namespace {

double seconds(Progress::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "3 h 20 min", or "3 h" when the smaller unit rounds to 0.
std::string two_units(long long n, long long per, std::string_view big, std::string_view small) {
  const long long a = n / per;
  const long long b = n % per;
  return b == 0 ? fmt::format("{} {}", a, big) : fmt::format("{} {} {} {}", a, big, b, small);
}

}  // namespace

std::string format_duration(double s) {
  s = std::isfinite(s) ? std::clamp(s, 0.0, 1e15) : 1e15;
  // Each bound is where rounding to the smaller unit carries into the next one.
  if (s < 59.5) return fmt::format("{} s", std::max(1LL, std::llround(s)));
  if (s < 3599.5) return two_units(std::llround(s), 60, "min", "s");
  if (s < 86370) return two_units(std::llround(s / 60), 60, "h", "min");
  return two_units(std::llround(s / 3600), 24, "d", "h");
}

std::string progress_bar(std::int64_t done, std::int64_t total, std::string_view units) {
  constexpr int kWidth = 40;
  const double share = total <= 0 ? 1.0 : std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
  const int filled = static_cast<int>(kWidth * share);
  return fmt::format("[{}{}] {}/{} {}", std::string(filled, '#'), std::string(kWidth - filled, ' '), done, total,
                     units);
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

Progress::Progress(std::int64_t total, std::string units, std::ostream& out, Options options,
                   Clock::time_point start)
    : total_(total), units_(std::move(units)), out_(out), options_(options), start_(start) {}

std::optional<double> Progress::seconds_per_unit(std::int64_t done, Clock::time_point now) const {
  if (!first_at_) return std::nullopt;
  // The steady pace, from the first unit on.
  const double since_first = seconds(now - *first_at_);
  if (done > first_done_ && since_first >= options_.measure_s) {
    return since_first / static_cast<double>(done - first_done_);
  }
  // Units so slow that the first alone took the measuring time.
  if (seconds(*first_at_ - start_) >= options_.measure_s) {
    return seconds(now - start_) / static_cast<double>(done);
  }
  return std::nullopt;
}

void Progress::update(std::int64_t done, std::string_view note, Clock::time_point now) {
  if (done > 0 && !first_at_) {
    first_at_ = now;
    first_done_ = done;
  }
  if (!estimate_s_ && done < total_) {
    if (const auto per = seconds_per_unit(done, now)) {
      estimate_s_ = seconds(now - start_) + *per * static_cast<double>(total_ - done);
      if (*estimate_s_ > options_.estimate_over_s) {
        // On the bar's line, when one is drawn: the bar comes back below it.
        out_ << (options_.bar && drawn_at_ ? "\r\x1b[K" : "")
             << fmt::format("about {} for {} {}\n", format_duration(*estimate_s_), total_, units_) << std::flush;
      }
    }
  }
  if (options_.bar) draw(done, note, now);
}

void Progress::draw(std::int64_t done, std::string_view note, Clock::time_point now) {
  if (finished_) return;
  const bool last = done >= total_;
  if (!last && drawn_at_ && seconds(now - *drawn_at_) < options_.redraw_s) return;
  drawn_at_ = now;
  std::string line = "\r" + progress_bar(done, total_, units_);
  if (!note.empty()) line += fmt::format("  {}", note);
  if (!last) {
    if (const auto per = seconds_per_unit(done, now)) {
      line += fmt::format("  (about {} left)", format_duration(*per * static_cast<double>(total_ - done)));
    }
  }
  line += "\x1b[K";  // what a longer line before left on the right
  if (last) {
    line += "\n";
    finished_ = true;
  }
  out_ << line << std::flush;
}

}  // namespace gpipe::tools
