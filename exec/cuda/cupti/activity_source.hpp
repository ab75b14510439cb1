// The seam between the tracer and CUPTI (as in Kineto): an ActivitySource
// collects GPU activity between start() and stop(), and tags host work with
// external correlation ids. CuptiActivitySource (cupti_activity_source.hpp) is
// the real one; MockActivitySource (mock_activity_source.hpp) replays
// synthetic records so timeline building is tested without a GPU.
#pragma once

#include <cstdint>

#include "exec/cuda/cupti/activity_record.hpp"

namespace gpipe::exec::cuda::cupti {

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;

  // Begins collecting. Throws RunError when collection cannot begin.
  virtual void start() = 0;
  // Flushes every buffer, stops collecting and returns what was collected
  // (with the count of dropped records).
  [[nodiscard]] virtual ActivityRecords stop() = 0;

  // GPU work launched by this thread between push and pop carries `external_id`
  // (one id per IR action). Pushes nest; pop returns the id it removes.
  virtual void push_external_id(std::uint64_t external_id) = 0;
  virtual std::uint64_t pop_external_id() = 0;
};

// Pushes an external id for the lifetime of the scope (one IR action).
class ExternalIdScope {
 public:
  ExternalIdScope(ActivitySource& source, std::uint64_t external_id) : source_(source) {
    source_.push_external_id(external_id);
  }
  ~ExternalIdScope() {
    try {
      (void)source_.pop_external_id();
    } catch (...) {  // a destructor must not throw; the pop's failure shows in the records
    }
  }
  ExternalIdScope(const ExternalIdScope&) = delete;
  ExternalIdScope& operator=(const ExternalIdScope&) = delete;

 private:
  ActivitySource& source_;
};

}  // namespace gpipe::exec::cuda::cupti
