// The CUDA profiler's host side, without a GPU: from hand-made CUPTI records
// to each layer's median times (exact ns), the checks that refuse incomplete
// records, the link's line through two copy sizes, and profile_cuda's argument
// checks (made before any device call). The random inputs it shares with the
// CPU profiler are tested in tests/exec/profiler_inputs_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/profiler/layer_profiler.hpp"
#include "exec/cuda/profiler/layer_timings.hpp"
#include "exec/cuda/profiler/link_probe.hpp"
#include "models/model_spec.hpp"

namespace gpipe::exec::cuda::profiler {
namespace {

using cupti::ActivityRecords;
using cupti::KernelRecord;
using cupti::MemcpyKind;
using cupti::MemcpyRecord;

KernelRecord kernel(std::uint32_t correlation, std::int64_t start, std::int64_t end) {
  return KernelRecord{.name = "k", .start_ns = start, .end_ns = end, .stream = 3, .correlation = correlation};
}

// The message of the E a call throws, or "no error".
template <typename E, typename Call>
std::string message_of(Call&& call) {
  try {
    call();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

MemcpyRecord memset_record(std::uint32_t correlation, std::int64_t start, std::int64_t end) {
  return MemcpyRecord{.kind = MemcpyKind::memset, .bytes = 64, .start_ns = start, .end_ns = end, .stream = 3,
                      .correlation = correlation};
}

TEST(LayerTimings, CallSpansItsKernelsAndCopiesExactly) {
  ActivityRecords r;
  // Id 1: a memset (correlation 10) and two kernels (11, 12); id 2: one kernel; id 3: nothing.
  r.external = {{1, 10}, {1, 11}, {1, 12}, {2, 20}};
  r.memcpys = {memset_record(10, 1'000, 1'100)};
  r.kernels = {kernel(12, 1'900, 2'345), kernel(11, 1'150, 1'800), kernel(20, 5'000, 5'007)};
  const auto d = gpu_durations(r, {1, 2, 3});
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d.at(1), 1'345);  // 2'345 - 1'000, gaps between launches included
  EXPECT_EQ(d.at(2), 7);
  EXPECT_FALSE(d.contains(3));
}

TEST(LayerTimings, MediansPerLayerSizeAndPhase) {
  ActivityRecords r;
  CallMap calls;
  std::uint32_t correlation = 100;
  std::uint64_t id = 1;
  // A call of `ns` nanoseconds, starting at id * 10'000.
  const auto call = [&](CallRef ref, std::int64_t ns) {
    r.external.push_back({id, correlation});
    const auto start = static_cast<std::int64_t>(id) * 10'000;
    r.kernels.push_back(kernel(correlation++, start, start + ns));
    calls.emplace(id++, ref);
  };
  // Layer 0 forward at b=1: three repeats, median 300.
  call({0, 1, Phase::forward, 0}, 500);
  call({0, 1, Phase::forward, 1}, 300);
  call({0, 1, Phase::forward, 2}, 100);
  // Layer 0 forward at b=2: two repeats, median 250.5.
  call({0, 2, Phase::forward, 0}, 200);
  call({0, 2, Phase::forward, 1}, 301);
  // Layer 1 backward at b=1.
  call({1, 1, Phase::backward, 0}, 900);
  // Layer 1's steps at both sizes pool into one figure: median of 40, 60, 80.
  call({1, 1, Phase::step, 0}, 40);
  call({1, 2, Phase::step, 0}, 80);
  call({1, 1, Phase::step, 1}, 60);
  // Layer 0's step (no parameters) launched nothing: it counts as 0.
  calls.emplace(id++, CallRef{0, 1, Phase::step, 0});
  // Work outside any call: an input copy between passes, and work of an unknown id.
  r.kernels.push_back(kernel(999, 0, 10));
  r.external.push_back({77, 500});
  r.kernels.push_back(kernel(500, 0, 10));
  r.dropped = 0;

  const LayerTimings t = layer_timings(r, calls);
  EXPECT_EQ(t.median_ns.at({0, 1, Phase::forward}), 300.0);
  EXPECT_EQ(t.median_ns.at({0, 2, Phase::forward}), 250.5);
  EXPECT_EQ(t.median_ns.at({1, 1, Phase::backward}), 900.0);
  EXPECT_EQ(t.median_ns.at({1, 0, Phase::step}), 60.0);
  EXPECT_EQ(t.median_ns.at({0, 0, Phase::step}), 0.0);
  EXPECT_EQ(t.median_ns.size(), 5U);
  EXPECT_TRUE(t.missing_calls.empty());
  EXPECT_EQ(t.empty_steps, std::vector<std::uint64_t>{10});
  EXPECT_EQ(t.unclaimed_records, 2U);
  EXPECT_NO_THROW(require_complete(t, calls));
}

TEST(LayerTimings, ForwardOrBackwardWithoutGpuWorkIsAnError) {
  ActivityRecords r;
  r.external = {{1, 10}};
  r.kernels = {kernel(10, 0, 50)};
  const CallMap calls = {{1, {0, 4, Phase::forward, 0}}, {2, {2, 4, Phase::backward, 3}}};
  const LayerTimings t = layer_timings(r, calls);
  EXPECT_EQ(t.missing_calls, std::vector<std::uint64_t>{2});
  EXPECT_FALSE(t.median_ns.contains({2, 4, Phase::backward}));
  EXPECT_EQ(message_of<RunError>([&] { require_complete(t, calls); }),
            "CUPTI recorded no GPU work for 1 layer call(s), the first the backward of layer 2 at b=4 in "
            "timed pass 3: the activity records are incomplete");
}

TEST(LayerTimings, DroppedRecordsAreAnError) {
  ActivityRecords r;
  r.external = {{1, 10}};
  r.kernels = {kernel(10, 0, 50)};
  r.dropped = 7;
  const CallMap calls = {{1, {0, 1, Phase::forward, 0}}};
  const LayerTimings t = layer_timings(r, calls);
  EXPECT_EQ(t.dropped_records, 7U);
  EXPECT_NE(message_of<RunError>([&] { require_complete(t, calls); }).find("CUPTI dropped 7 activity records"),
            std::string::npos);
}

profiles::ProfileSample at_size(int b) {
  profiles::ProfileSample s;
  s.micro_batch_size = b;
  return s;
}

TEST(LayerTimings, ApplyTimingsWritesMicroseconds) {
  LayerTimings t;
  t.median_ns = {{{0, 1, Phase::forward}, 1'500.0},
                 {{0, 1, Phase::backward}, 3'250.0},
                 {{0, 0, Phase::step}, 42.0},
                 {{1, 1, Phase::forward}, 10.0},
                 {{1, 1, Phase::backward}, 20.0}};
  std::vector<profiles::LayerProfile> layers(2);
  layers[0].name = "fc0";
  layers[0].samples.push_back(at_size(1));
  layers[1].name = "loss";
  layers[1].samples.push_back(at_size(1));
  apply_timings(t, layers);
  EXPECT_EQ(layers[0].samples[0].fwd_us, 1.5);
  EXPECT_EQ(layers[0].samples[0].bwd_us, 3.25);
  EXPECT_EQ(layers[0].optimizer_us, 0.042);
  EXPECT_EQ(layers[1].samples[0].fwd_us, 0.01);
  EXPECT_EQ(layers[1].optimizer_us, 0.0);  // no step timed: a parameterless layer

  layers[1].samples.push_back(at_size(2));
  EXPECT_EQ(message_of<RunError>([&] { apply_timings(t, layers); }), "layer 1 (loss): no forward was timed at b=2");
}

TEST(LinkProbe, LineThroughTwoCopySizes) {
  // 1'000 B in 2'500 ns (median of three), 1'001'000 B in 12'500 ns: 10^6 B
  // more in 10^4 ns more is 100 GB/s, and 1'000 B of it take 10 ns.
  const profiles::Link link = link_from_copies(1'000, {3'000, 2'000, 2'500}, 1'001'000, {12'500, 12'400, 13'000});
  EXPECT_DOUBLE_EQ(link.bandwidth_GBps, 100.0);
  EXPECT_DOUBLE_EQ(link.latency_us, 2.49);
  // The profile's model gives back both medians.
  EXPECT_DOUBLE_EQ(link.latency_us + 1'000 / (link.bandwidth_GBps * 1e3), 2.5);
  EXPECT_DOUBLE_EQ(link.latency_us + 1'001'000 / (link.bandwidth_GBps * 1e3), 12.5);
}

TEST(LinkProbe, RefusesSamplesWithNoSlope) {
  EXPECT_THROW((void)link_from_copies(512, {100}, 1 << 20, {100}), RunError);
  EXPECT_THROW((void)link_from_copies(512, {}, 1 << 20, {100}), InputError);
  EXPECT_THROW((void)link_from_copies(512, {10}, 512, {100}), InputError);
}

TEST(ProfileCuda, BadArgumentsFailBeforeTheDevice) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  const std::vector<int> sizes{1};
  CudaProfilerOptions options;
  options.repeats = 0;
  EXPECT_EQ(message_of<InputError>([&] { (void)profile_cuda(model, sizes, options); }),
            "--repeats must be at least 1, got 0");
  options = {};
  options.stages = 0;
  EXPECT_EQ(message_of<InputError>([&] { (void)profile_cuda(model, sizes, options); }),
            "--stages 0: need at least one stage");
  EXPECT_THROW((void)profile_cuda(model, std::vector<int>{1, 1}), InputError);
}

TEST(ProfileCuda, NoDeviceIsOneRunError) {
  if (device_count() > 0) GTEST_SKIP() << "a device is present";
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  const std::string error = message_of<RunError>([&] { (void)profile_cuda(model, std::vector<int>{1}); });
  EXPECT_EQ(error.rfind("no CUDA device: ", 0), 0U) << error;
}

}  // namespace
}  // namespace gpipe::exec::cuda::profiler
