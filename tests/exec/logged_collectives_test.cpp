// The profile's logged groups (exec/cpu/logged_tensor_parallel.hpp,
// logged_context_parallel.hpp): each call reaches the group unchanged, and the
// calls' medians, size by size, are fitted as the ring's closed form.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "exec/cpu/collective_call_log.hpp"
#include "exec/cpu/logged_tensor_parallel.hpp"

namespace gpipe::exec::cpu {
namespace {

using models::Collective;

TEST(CollectiveCallLog, FitsTheMedianOfEachSize) {
  CollectiveCallLog log;
  // At 1000 B: 3, 9 and 3 us (a late peer once), median 3; at 2000 B: 5 us.
  // The line 1 us + 0.002 us a byte; an all-gather over 2 is one step, so
  // 1 us a step and 0.25 GB/s (profiles::collective_ring_fit).
  for (const double us : {3.0, 9.0, 3.0}) log.record(Collective::all_gather, 1000, us);
  log.record(Collective::all_gather, 2000, 5.0);
  log.record(Collective::reduce_scatter, 1000, 50.0);  // another kind: not in the all-gather's fit
  const auto fit = log.fit(Collective::all_gather, 2);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->latency_us, 1.0, 1e-9);
  EXPECT_NEAR(fit->bandwidth_GBps, 0.25, 1e-12);
  EXPECT_FALSE(log.fit(Collective::all_reduce, 2).has_value());  // never called
  EXPECT_FALSE(log.fit(Collective::all_gather, 1).has_value());  // no group
}

// Doubles what it is given, as a sum over two equal parts would.
class TwoEqualParts final : public TensorParallelComm {
 public:
  [[nodiscard]] int size() const override { return 2; }
  [[nodiscard]] int rank() const override { return 1; }
  void all_reduce_sum(std::span<float> values) override {
    ++calls;
    for (float& v : values) v *= 2;
  }
  int calls = 0;
};

TEST(LoggedTensorParallel, PassesEachCallOnAndFitsItsAllReduces) {
  TwoEqualParts group;
  LoggedTensorParallel logged(group);
  EXPECT_EQ(logged.size(), 2);
  EXPECT_EQ(logged.rank(), 1);
  EXPECT_FALSE(logged.fit().has_value());
  std::vector<float> values{1.5F, -2.0F};
  logged.all_reduce_sum(values);
  EXPECT_EQ(group.calls, 1);
  EXPECT_EQ(values, (std::vector<float>{3.0F, -4.0F}));
  const auto fit = logged.fit();  // one size: a line through the origin
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->latency_us, 0.0);
  EXPECT_GT(fit->bandwidth_GBps, 0.0);
}

}  // namespace
}  // namespace gpipe::exec::cpu
