#include "exec/runtime/worker_steps.hpp"

#include <exception>

#include <fmt/format.h>

#include "exec/runtime/aborted.hpp"

namespace gpipe::exec {

bool run_worker_steps(RunControl& control, schedules::Rank rank,
                      const std::vector<schedules::Action>& program, const int& current, int steps,
                      const std::function<void(int step)>& run_step) noexcept {
  int step = 0;
  try {
    for (; step < steps; ++step) run_step(step);
    return true;
  } catch (const Aborted&) {
    // Another worker's error (or the watchdog) stopped the run; it has the message.
  } catch (const std::exception& e) {
    if (current >= 0) {
      control.fail(fmt::format("rank {} failed in {}: {}", rank.value,
                               to_string(program[static_cast<std::size_t>(current)]), e.what()));
    } else {
      control.fail(fmt::format("rank {} failed at step {}: {}", rank.value, step, e.what()));
    }
  } catch (...) {
    control.fail(fmt::format("rank {} failed at step {}: unknown exception", rank.value, step));
  }
  return false;
}

}  // namespace gpipe::exec
