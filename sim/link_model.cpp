#include "sim/link_model.hpp"

#include <cmath>

namespace gpipe::sim {

std::int64_t UniformLink::transfer_ns(schedules::Rank, schedules::Rank, std::int64_t bytes) const {
  const double us = latency_us_ + static_cast<double>(bytes) / (bandwidth_GBps_ * 1e3);
  return std::llround(us * 1e3);
}

}  // namespace gpipe::sim
