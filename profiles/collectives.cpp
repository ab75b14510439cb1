#include "profiles/collectives.hpp"

#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::profiles {

std::string_view to_string(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::tree ? "tree" : "ring";
}

using models::to_string;

namespace {

void check(Collective collective, int ranks, std::int64_t bytes, const CollectiveLink& link) {
  if (ranks < 1) throw InputError(fmt::format("{} over {} ranks: a collective needs at least one", to_string(collective), ranks));
  if (bytes < 0) throw InputError(fmt::format("{} of {} bytes: the bytes must be 0 or more", to_string(collective), bytes));
  if (!std::isfinite(link.bandwidth_GBps) || link.bandwidth_GBps <= 0) {
    throw InputError(fmt::format("{}: bandwidth {} GB/s is not a finite positive number", to_string(collective),
                                 link.bandwidth_GBps));
  }
  if (!std::isfinite(link.latency_us) || link.latency_us < 0) {
    throw InputError(fmt::format("{}: latency {} us is not a finite number of 0 or more", to_string(collective),
                                 link.latency_us));
  }
}

// Microseconds for `count` steps of a latency and a piece of `piece_bytes`.
double steps_us(double count, double piece_bytes, const CollectiveLink& link) {
  return count * (link.latency_us + piece_bytes / (link.bandwidth_GBps * 1e3));
}

}  // namespace

std::int64_t collective_ns(Collective collective, CollectiveAlgorithm algorithm, int ranks, std::int64_t bytes,
                           const CollectiveLink& link) {
  check(collective, ranks, bytes, link);
  if (algorithm == CollectiveAlgorithm::tree && collective != Collective::all_reduce) {
    throw InputError(fmt::format("{} has no tree algorithm here: a ring", to_string(collective)));
  }
  if (ranks == 1) return 0;
  const double n = ranks;
  const auto s = static_cast<double>(bytes);
  double us = 0;
  if (algorithm == CollectiveAlgorithm::tree) {
    const double depth = std::bit_width(static_cast<unsigned>(ranks - 1));  // ceil(log2 n) for n >= 2
    us = 2 * depth * link.latency_us + 2 * s / (link.bandwidth_GBps * 1e3);
  } else {
    const double steps = collective == Collective::all_reduce ? 2 * (n - 1) : n - 1;
    us = steps_us(steps, s / n, link);
  }
  return std::llround(us * 1e3);
}

CollectiveCost fastest_collective(Collective collective, int ranks, std::int64_t bytes, const CollectiveLink& link) {
  CollectiveCost best{CollectiveAlgorithm::ring, collective_ns(collective, CollectiveAlgorithm::ring, ranks, bytes, link)};
  if (collective == Collective::all_reduce) {
    const std::int64_t tree = collective_ns(collective, CollectiveAlgorithm::tree, ranks, bytes, link);
    if (tree < best.ns) best = {CollectiveAlgorithm::tree, tree};
  }
  return best;
}

double bus_factor(Collective collective, int ranks) {
  if (ranks < 1) throw InputError(fmt::format("{} over {} ranks: a collective needs at least one", to_string(collective), ranks));
  const double n = ranks;
  return collective == Collective::all_reduce ? 2 * (n - 1) / n : (n - 1) / n;
}

}  // namespace gpipe::profiles
