// Each collective call's time, kept by kind and size while a profile runs the
// blocks' passes over a real group, and the ring-form fit of their medians
// (profiles::collective_ring_fit): the collectives as a run's blocks meet
// them, the waits for the group's other processes included, which a probe of
// the collectives alone does not see. Thread-safe: a rank's compute team may
// call from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "models/collective.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cpu {

class CollectiveCallLog {
 public:
  void record(models::Collective collective, std::int64_t bytes, double us);
  // Runs `call` and records how long it took.
  template <class F>
  void time(models::Collective collective, std::int64_t bytes, F&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    record(collective, bytes,
           std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }

  // The fit over `ranks` of the median time at each size `collective` was
  // called with (nccl-tests' sizes: the whole gathered, scattered or summed
  // tensor); nullopt when it never was, or with fewer than two ranks.
  [[nodiscard]] std::optional<profiles::CollectiveLink> fit(models::Collective collective, int ranks) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<models::Collective, std::int64_t>, std::vector<double>> times_us_;  // by kind and bytes
};

}  // namespace gpipe::exec::cpu
