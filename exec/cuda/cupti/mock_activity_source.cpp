#include "exec/cuda/cupti/mock_activity_source.hpp"

#include "base/error.hpp"

namespace gpipe::exec::cuda::cupti {

void MockActivitySource::start() {
  if (started_) throw RunError("activity source: start() while already started");
  started_ = true;
}

ActivityRecords MockActivitySource::stop() {
  if (!started_) throw RunError("activity source: stop() without start()");
  started_ = false;
  return records;
}

void MockActivitySource::push_external_id(std::uint64_t external_id) {
  pushed_.push_back(external_id);
  stack_.push_back(external_id);
}

std::uint64_t MockActivitySource::pop_external_id() {
  if (stack_.empty()) throw RunError("activity source: pop_external_id() with nothing pushed");
  const std::uint64_t id = stack_.back();
  stack_.pop_back();
  return id;
}

}  // namespace gpipe::exec::cuda::cupti
