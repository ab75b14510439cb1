#include "sim/link_model.hpp"

#include <cmath>

namespace gpipe::sim {

std::int64_t UniformLink::transfer_ns(schedules::Rank, schedules::Rank, std::int64_t bytes) const {
  const double us = latency_us_ + static_cast<double>(bytes) / (bandwidth_GBps_ * 1e3);
  return std::llround(us * 1e3);
}

std::string_view to_string(LinkSharing sharing) {
  return sharing == LinkSharing::shared ? "shared" : "fifo";
}

std::optional<LinkSharing> parse_link_sharing(std::string_view text) {
  if (text == "fifo") return LinkSharing::fifo;
  if (text == "shared") return LinkSharing::shared;
  return std::nullopt;
}

}  // namespace gpipe::sim
