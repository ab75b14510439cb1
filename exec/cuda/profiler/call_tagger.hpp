// How the CUDA profiler names its calls for CUPTI: in a timed pass each
// forward, backward and step runs under a fresh external id (pushed for the
// call, popped after it, even when it throws) and the id's CallRef is noted,
// so layer_timings can find the call's kernels; in an untimed pass the calls
// run untagged. Header-only and free of CUDA, so it is tested with
// MockActivitySource in CI.
#pragma once

#include <cstdint>

#include "exec/cuda/cupti/activity_source.hpp"
#include "exec/cuda/profiler/layer_timings.hpp"

namespace gpipe::exec::cuda::profiler {

class CallTagger {
 public:
  // Tags the calls that follow with ids of `source`; nullptr: untagged (warm-up).
  void tag_with(cupti::ActivitySource* source) { source_ = source; }

  template <typename Call>
  void run(const CallRef& ref, Call&& call) {
    if (source_ == nullptr) {
      call();
      return;
    }
    const std::uint64_t id = next_id_++;
    calls_.emplace(id, ref);
    const cupti::ExternalIdScope scope(*source_, id);
    call();
  }

  // Every tagged call so far, by id (1, 2, ...).
  [[nodiscard]] const CallMap& calls() const { return calls_; }

 private:
  cupti::ActivitySource* source_ = nullptr;
  CallMap calls_;
  std::uint64_t next_id_ = 1;
};

}  // namespace gpipe::exec::cuda::profiler
