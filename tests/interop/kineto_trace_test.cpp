// A PyTorch profiler trace as gpipe's torch importers read it
// (interop/kineto_trace.hpp): the real trace torch wrote
// (tests/data/torch/, made by make_traces.py), and bad input, each a
// one-line InputError naming the trace and what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "interop/kineto_trace.hpp"
#include "tests/error_of.hpp"
#include "tests/interop/torch_data.hpp"

namespace gpipe::interop {
namespace {

using nlohmann::json;

using testing::torch_data;

std::string kineto_error(const json& document) {
  return gpipe::testing::error_of([&] { (void)kineto_trace_from_json(document, "t.json"); });
}

TEST(KinetoTrace, ReadsTheTraceTorchWrote) {
  const KinetoTrace trace = read_kineto_trace(torch_data("gpt_cpu_b2.json"));
  EXPECT_TRUE(trace.record_shapes);
  EXPECT_TRUE(trace.profile_memory);
  EXPECT_TRUE(trace.with_stack);
  EXPECT_TRUE(trace.device_names.empty());  // a CPU trace
  EXPECT_GT(trace.base_time_ns, 0);
  EXPECT_FALSE(trace.memory.empty());
  EXPECT_TRUE(std::ranges::is_sorted(trace.events, {}, &KinetoEvent::start_ns));
  const auto block = std::ranges::find(trace.events, "nn.Module: Block_0", &KinetoEvent::name);
  ASSERT_NE(block, trace.events.end());
  EXPECT_EQ(block->category, "python_function");
  // Its first op, the pre-attention LayerNorm, has the block's input [2, 16, 32] floats.
  const auto norm = std::find_if(block, trace.events.end(), [](const KinetoEvent& e) { return e.name == "aten::layer_norm"; });
  ASSERT_NE(norm, trace.events.end());
  EXPECT_TRUE(block->encloses(*norm));
  EXPECT_EQ(norm->input_dims.front(), (std::vector<std::int64_t>{2, 16, 32}));
  EXPECT_EQ(norm->input_types.front(), "float");
  ASSERT_TRUE(norm->sequence_number.has_value());
  // Its backward carries the same sequence number.
  const auto backward = std::ranges::find_if(trace.events, [&](const KinetoEvent& e) {
    return e.name == "autograd::engine::evaluate_function: NativeLayerNormBackward0" &&
           e.sequence_number == norm->sequence_number;
  });
  EXPECT_NE(backward, trace.events.end());
  // A TensorList input (aten::cat's) is not one tensor: no dims.
  const auto cat = std::ranges::find(trace.events, "aten::cat", &KinetoEvent::name);
  ASSERT_NE(cat, trace.events.end());
  EXPECT_TRUE(cat->input_dims.front().empty());
}

TEST(KinetoTrace, TimesAreIntegerNanoseconds) {
  const json document = {
      {"traceEvents",
       {{{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mm"}, {"pid", 7}, {"tid", "main"}, {"ts", 4943295767057.935},
         {"dur", 16.705}, {"args", {{"Sequence number", 108}, {"Input Dims", {{2, 3}, {}}}, {"Input type", {"float", "Scalar"}}}}},
        {{"ph", "i"}, {"name", "[memory]"}, {"ts", 1.5}, {"args", {{"Addr", 94443595516736}, {"Bytes", -2048}, {"Total Allocated", 0}}}},
        {{"ph", "M"}, {"name", "process_name"}}}}};
  const KinetoTrace t = kineto_trace_from_json(document, "t.json");
  ASSERT_EQ(t.events.size(), 1U);
  EXPECT_EQ(t.events[0].start_ns, 4'943'295'767'057'935);
  EXPECT_EQ(t.events[0].duration_ns(), 16'705);
  EXPECT_EQ(t.events[0].process, "7");
  EXPECT_EQ(t.events[0].thread, "main");
  EXPECT_EQ(t.events[0].sequence_number, 108);
  ASSERT_EQ(t.memory.size(), 1U);
  EXPECT_EQ(t.memory[0].time_ns, 1'500);
  EXPECT_EQ(t.memory[0].address, 94443595516736);
  EXPECT_EQ(t.memory[0].bytes, -2048);
  EXPECT_FALSE(t.record_shapes);
}

TEST(KinetoTrace, BadInputIsOneLineNamingTheTraceAndTheField) {
  const json good_event = {{"ph", "X"}, {"name", "aten::mm"}, {"ts", 1.0}, {"dur", 2.0}};
  const auto with = [&](const char* key, json value) {
    json ev = good_event;
    ev[key] = std::move(value);
    return json{{"traceEvents", {ev}}};
  };
  EXPECT_EQ(kineto_error(json::array()), "t.json: not a PyTorch profiler trace: expected a JSON object");
  EXPECT_EQ(kineto_error(json::object()), "t.json: not a PyTorch profiler trace: no 'traceEvents' array");
  EXPECT_EQ(kineto_error(with("dur", -1.0)), "t.json: traceEvents[0]: 'dur' must be a non-negative number of microseconds");
  EXPECT_EQ(kineto_error(with("ts", "soon")), "t.json: traceEvents[0]: 'ts' must be a number");
  EXPECT_EQ(kineto_error(with("name", 3)), "t.json: traceEvents[0]: 'name' must be a string");
  EXPECT_EQ(kineto_error(with("args", {{"Input Dims", {{-1}}}})),
            "t.json: traceEvents[0]: 'args.Input Dims' must hold non-negative integers or lists of them");
  EXPECT_EQ(kineto_error(with("args", {{"Sequence number", "x"}})),
            "t.json: traceEvents[0]: 'args.Sequence number' must be an integer");
  EXPECT_EQ(kineto_error({{"traceEvents", {{{"ph", "i"}, {"name", "[memory]"}, {"ts", 1.0}, {"args", {{"Addr", 1}}}}}}}),
            "t.json: traceEvents[0]: 'args.Bytes' is missing");
  // A truncated file is not JSON, and says so.
  const std::filesystem::path cut = std::filesystem::path(::testing::TempDir()) / "gpipe_kineto_cut.json";
  write_text_file(cut, read_text_file(torch_data("gpt_cpu_b1.json")).substr(0, 5000));
  try {
    (void)read_kineto_trace(cut);
    ADD_FAILURE() << "a truncated trace was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(cut.string() + ": not valid JSON"), std::string::npos) << e.what();
  }
  std::filesystem::remove(cut);
}

TEST(KinetoTrace, ElementBytesOfTorchTypes) {
  EXPECT_EQ(torch_element_bytes("float"), 4);
  EXPECT_EQ(torch_element_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(torch_element_bytes("long int"), 8);
  EXPECT_EQ(torch_element_bytes("int"), 4);
  EXPECT_EQ(torch_element_bytes("Scalar"), std::nullopt);
  EXPECT_EQ(torch_element_bytes(""), std::nullopt);
}

}  // namespace
}  // namespace gpipe::interop
