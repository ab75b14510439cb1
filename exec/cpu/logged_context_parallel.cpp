#include "exec/cpu/logged_context_parallel.hpp"

#include <chrono>
#include <cstdint>

namespace gpipe::exec::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

void LoggedContextParallel::all_gather(std::span<const float> mine, std::span<float> all) {
  const auto start = Clock::now();
  group_.all_gather(mine, all);
  log_.record(models::Collective::all_gather, static_cast<std::int64_t>(all.size_bytes()), us_since(start));
}

void LoggedContextParallel::reduce_scatter_sum(std::span<const float> all, std::span<float> mine) {
  const auto start = Clock::now();
  group_.reduce_scatter_sum(all, mine);
  log_.record(models::Collective::reduce_scatter, static_cast<std::int64_t>(all.size_bytes()), us_since(start));
}

}  // namespace gpipe::exec::cpu
