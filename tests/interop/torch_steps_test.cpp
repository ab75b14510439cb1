// A trace of several steps split into them (interop/torch_steps.hpp): by its
// ProfilerStep#N spans, else by each run of the model's forward (or, with
// --layers, of the first layer's span), else by each optimizer step, else
// one step; on built traces in exact ns, and on the traces torch wrote.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "interop/kineto_trace.hpp"
#include "interop/torch_steps.hpp"
#include "tests/interop/torch_data.hpp"

namespace gpipe::interop {
namespace {

using testing::torch_data;

void add(KinetoTrace& t, std::string name, std::string cat, std::int64_t start, std::int64_t end) {
  t.events.push_back({.name = std::move(name), .category = std::move(cat), .process = "1", .thread = "1",
                      .start_ns = start, .end_ns = end});
}

// Three steps at 0, 1000 and 2000 ns: the model's forward (with a child of
// the same class name's root inside, which is no new step), a label around
// its first layer, a backward op, the optimizer's step.
KinetoTrace three_steps(bool marked) {
  KinetoTrace t;
  for (std::int64_t s = 0; s < 3000; s += 1000) {
    if (marked) add(t, "ProfilerStep#" + std::to_string(s / 1000 + 1), "user_annotation", s, s + 950);
    add(t, "nn.Module: Net_0", "python_function", s + 10, s + 400);
    add(t, "layer0", "user_annotation", s + 20, s + 100);
    add(t, "nn.Module: Net_0", "python_function", s + 30, s + 60);  // nested: not a forward of its own
    add(t, "autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", s + 500, s + 540);
    add(t, "Optimizer.step#SGD.step", "user_annotation", s + 700, s + 800);
  }
  std::ranges::stable_sort(t.events, [](const KinetoEvent& a, const KinetoEvent& b) { return a.start_ns < b.start_ns; });
  return t;
}

TEST(SplitTraceSteps, ProfilerStepSpansFirst) {
  const TraceSteps s = split_trace_steps(three_steps(true), std::nullopt);
  EXPECT_EQ(s.by, "ProfilerStep#N spans");
  ASSERT_EQ(s.steps.size(), 3U);
  EXPECT_EQ(s.steps[1].start_ns, 1000);
  EXPECT_EQ(s.steps[1].end_ns, 1950);
}

TEST(SplitTraceSteps, ElseEachRunOfTheModelsForward) {
  const TraceSteps s = split_trace_steps(three_steps(false), std::nullopt);
  EXPECT_EQ(s.by, "the forward of module Net_0");
  ASSERT_EQ(s.steps.size(), 3U);
  // From one forward's start to the next's, the last to the trace's end.
  EXPECT_EQ(s.steps[0].start_ns, 10);
  EXPECT_EQ(s.steps[0].end_ns, 1009);
  EXPECT_EQ(s.steps[2].start_ns, 2010);
  EXPECT_EQ(s.steps[2].end_ns, 2800);
}

TEST(SplitTraceSteps, WithLayersTheFirstLayersSpan) {
  const TraceSteps s = split_trace_steps(three_steps(false), std::regex("layer[0-9]+"));
  EXPECT_EQ(s.by, "the span of layer layer0");
  ASSERT_EQ(s.steps.size(), 3U);
  EXPECT_EQ(s.steps[1].start_ns, 1020);
  EXPECT_EQ(s.steps[1].end_ns, 2019);
}

TEST(SplitTraceSteps, OnOneThreadInTimeOrderAndNotInsideTheBackward) {
  KinetoTrace t = three_steps(false);
  // The first layer run again inside each backward (activation checkpointing),
  // and the model's forward on another thread: neither opens a step.
  for (std::int64_t s = 0; s < 3000; s += 1000) add(t, "layer0", "user_annotation", s + 510, s + 520);
  t.events.push_back({.name = "nn.Module: Net_0", .category = "python_function", .process = "1", .thread = "2",
                      .start_ns = 1500, .end_ns = 1600});
  std::ranges::stable_sort(t.events, [](const KinetoEvent& a, const KinetoEvent& b) { return a.start_ns < b.start_ns; });
  const TraceSteps by_model = split_trace_steps(t, std::nullopt);
  ASSERT_EQ(by_model.steps.size(), 3U);
  EXPECT_EQ(by_model.steps[1].start_ns, 1010);
  const TraceSteps by_layer = split_trace_steps(t, std::regex("layer[0-9]+"));
  ASSERT_EQ(by_layer.steps.size(), 3U);
  EXPECT_EQ(by_layer.steps[1].start_ns, 1020);
  EXPECT_EQ(by_layer.steps[1].end_ns, 2019);
  // Two optimizer steps at once on two threads: the second thread's is none of the steps.
  KinetoTrace o;
  add(o, "Optimizer.step#SGD.step", "user_annotation", 700, 800);
  o.events.push_back({.name = "Optimizer.step#SGD.step", .category = "user_annotation", .process = "1",
                      .thread = "2", .start_ns = 710, .end_ns = 750});
  add(o, "Optimizer.step#SGD.step", "user_annotation", 1700, 1800);
  const TraceSteps optimizer = split_trace_steps(o, std::nullopt);
  ASSERT_EQ(optimizer.steps.size(), 2U);
  EXPECT_EQ(optimizer.steps[1].start_ns, 801);
  EXPECT_EQ(optimizer.steps[1].end_ns, 1800);
}

TEST(SplitTraceSteps, ElseTheOptimizersStepsElseTheWholeTrace) {
  KinetoTrace t;
  for (std::int64_t s = 0; s < 2000; s += 1000) {
    add(t, "aten::mm", "cpu_op", s + 10, s + 90);
    add(t, "Optimizer.step#SGD.step", "user_annotation", s + 700, s + 800);
  }
  TraceSteps s = split_trace_steps(t, std::nullopt);
  EXPECT_EQ(s.by, "Optimizer.step# spans");
  ASSERT_EQ(s.steps.size(), 2U);
  EXPECT_EQ(s.steps[0].start_ns, 10);
  EXPECT_EQ(s.steps[0].end_ns, 800);
  EXPECT_EQ(s.steps[1].start_ns, 801);
  EXPECT_EQ(s.steps[1].end_ns, 1800);
  t.events.pop_back();
  t.events.erase(t.events.begin() + 1);  // one optimizer step left: one step, the whole trace
  s = split_trace_steps(t, std::nullopt);
  EXPECT_EQ(s.by, "the whole trace (no step markers)");
  ASSERT_EQ(s.steps.size(), 1U);
  EXPECT_EQ(s.steps[0].start_ns, 10);
  EXPECT_EQ(s.steps[0].end_ns, 1090);
  EXPECT_TRUE(split_trace_steps(KinetoTrace{}, std::nullopt).steps.empty());
}

TEST(SplitTraceSteps, TheTracesTorchWrote) {
  // Unmarked (module events, no prof.step()), marked, and record_function labels.
  const TraceSteps unmarked = split_trace_steps(read_kineto_trace(torch_data("steps_unmarked.json")), std::nullopt);
  EXPECT_EQ(unmarked.by, "the forward of module GPT_0");
  EXPECT_EQ(unmarked.steps.size(), 4U);
  const TraceSteps marked = split_trace_steps(read_kineto_trace(torch_data("steps_marked.json")), std::nullopt);
  EXPECT_EQ(marked.by, "ProfilerStep#N spans");
  EXPECT_EQ(marked.steps.size(), 4U);
  const TraceSteps labels = split_trace_steps(read_kineto_trace(torch_data("steps_labels.json")), std::regex("layer[0-9]+"));
  EXPECT_EQ(labels.by, "the span of layer layer0");
  EXPECT_EQ(labels.steps.size(), 4U);
  // make_traces.py's marked trace of three steps.
  const TraceSteps three = split_trace_steps(read_kineto_trace(torch_data("gpt_cpu_b1.json")), std::nullopt);
  EXPECT_EQ(three.by, "ProfilerStep#N spans");
  EXPECT_EQ(three.steps.size(), 3U);
}

}  // namespace
}  // namespace gpipe::interop
