// An ActivitySource that replays synthetic records: tests add the kernels,
// copies and correlations a GPU would have reported, and check what the
// tracer builds from them. It also records the push/pop sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cuda/cupti/activity_source.hpp"

namespace gpipe::exec::cuda::cupti {

class MockActivitySource final : public ActivitySource {
 public:
  // What stop() returns (records added before or during the session).
  ActivityRecords records;

  void start() override;
  [[nodiscard]] ActivityRecords stop() override;
  void push_external_id(std::uint64_t external_id) override;
  std::uint64_t pop_external_id() override;

  [[nodiscard]] bool started() const { return started_; }
  // Every id pushed, in order (pops do not remove them from this log).
  [[nodiscard]] const std::vector<std::uint64_t>& pushed() const { return pushed_; }
  [[nodiscard]] std::size_t depth() const { return stack_.size(); }

 private:
  bool started_ = false;
  std::vector<std::uint64_t> pushed_;
  std::vector<std::uint64_t> stack_;
};

}  // namespace gpipe::exec::cuda::cupti
