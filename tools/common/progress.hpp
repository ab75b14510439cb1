// Progress of long work (gpipe-run train's steps, gpipe-run profile's passes,
// gpipe-sim sweep's configurations) on stderr, in two parts:
//   - once, an estimate of the whole, when the work will take long (over 10 s):
//       about 3 h 20 min for 100000000 steps
//     on a terminal and in logs alike, since "how long will this take" is
//     what a log of a long job is first read for;
//   - a bar that redraws itself, only when stderr is a terminal (a log would
//     fill with carriage returns):
//       [####                                    ] 1200/10000 steps  loss 0.512  (about 2 min 10 s left)
//
// The estimate is made once a second of work has been measured (Options::
// measure_s): from the first update on, so that what came before the first
// unit (building the stages, starting threads) does not count per unit; or,
// when the first unit itself took that long, from the start. Everything takes
// the time as an argument, so tests drive it with exact times.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace gpipe::tools {

// A duration to its two leading units, rounded to the smaller: "45 s",
// "2 min 5 s", "3 h 20 min", "2 d 4 h"; a zero smaller unit is left out
// ("3 h"); at least "1 s".
[[nodiscard]] std::string format_duration(double seconds);

// "[########                                ] 20/100 steps": 40 columns.
[[nodiscard]] std::string progress_bar(std::int64_t done, std::int64_t total, std::string_view units);

// Whether stderr is a terminal (where a bar may redraw itself).
[[nodiscard]] bool stderr_is_terminal();

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    bool bar = false;             // redraw a bar (stderr is a terminal)
    double estimate_over_s = 10;  // say the estimate when the whole takes longer than this
    double measure_s = 1;         // time measured before estimating
    double redraw_s = 0.1;        // the bar redraws at most this often (and at the end)
  };

  // `total` units of work named `units` ("steps"), started at `start`.
  Progress(std::int64_t total, std::string units, std::ostream& out, Options options,
           Clock::time_point start = Clock::now());

  // `done` units have finished at `now`; `note` goes beside the bar (the last loss).
  void update(std::int64_t done, std::string_view note = {}, Clock::time_point now = Clock::now());

  // The whole work's estimated seconds, once made.
  [[nodiscard]] std::optional<double> estimate_s() const { return estimate_s_; }

 private:
  // Seconds per unit as measured so far, once measure_s is measured.
  [[nodiscard]] std::optional<double> seconds_per_unit(std::int64_t done, Clock::time_point now) const;
  void draw(std::int64_t done, std::string_view note, Clock::time_point now);

  std::int64_t total_;
  std::string units_;
  std::ostream& out_;
  Options options_;
  Clock::time_point start_;
  std::optional<Clock::time_point> first_at_;  // the first update with work done
  std::int64_t first_done_ = 0;
  std::optional<double> estimate_s_;
  std::optional<Clock::time_point> drawn_at_;
  bool finished_ = false;
};

}  // namespace gpipe::tools
