// A profile from PyTorch profiler traces (interop/torch_trace_profile.hpp):
// on the traces torch wrote of the bench GPT (tests/data/torch/), its
// parameters and boundary bytes are gpipe's own model's to the byte; on small
// traces built here, each rule in exact numbers (forward ops, backward by
// sequence number, parameters by AccumulateGrad, memory kept, medians), and
// every trace it cannot read is one InputError saying what is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "interop/kineto_trace.hpp"
#include "interop/torch_steps.hpp"
#include "interop/torch_trace_profile.hpp"
#include "models/model.hpp"
#include "models/model_spec.hpp"
#include "profiles/profile.hpp"
#include "tests/error_of.hpp"
#include "tests/interop/torch_data.hpp"

namespace gpipe::interop {
namespace {


using testing::torch_data;

TEST(TorchTraceProfile, TheBenchGptsTracesGiveGpipesParametersAndBoundaryBytes) {
  const std::vector<TorchTrace> traces = {{interop::read_kineto_trace(torch_data("gpt_cpu_b1.json")), 1},
                                          {interop::read_kineto_trace(torch_data("gpt_cpu_b2.json")), 2}};
  const profiles::Profile p = torch_trace_profile(traces, {.torch_version = "2.15.0+cu132"});
  EXPECT_EQ(p.source, "torch-trace");
  EXPECT_EQ(p.model, "torch:GPT_0");
  EXPECT_EQ(p.dtype, "fp32");
  EXPECT_EQ(p.device, "CPU (vm)");
  EXPECT_NE(p.measured_from.find("PyTorch 2.15.0+cu132"), std::string::npos);
  ASSERT_EQ(p.layers.size(), 4U);
  // gpipe's transformer of the same shape: embed, block0, block1, head.
  const models::Model gpipe = models::parse_model("transformer:layers=2,hidden=32,heads=2,seq=16,vocab=64");
  const std::vector<std::string> names{"Embed_0", "Block_0", "Block_1", "Head_0"};
  const std::vector<std::string> kinds{"Embed", "Block", "Block", "Head"};
  for (std::size_t i = 0; i < 4; ++i) {
    const profiles::LayerProfile& l = p.layers[i];
    EXPECT_EQ(l.name, names[i]);
    EXPECT_EQ(l.kind, kinds[i]);
    EXPECT_EQ(l.param_bytes, gpipe.layers[i].params * 4) << l.name;
    ASSERT_EQ(l.micro_batch_sizes(), (std::vector<int>{1, 2}));
    for (const profiles::ProfileSample& s : l.samples) {
      const models::LayerBytes bytes = models::bytes_at(gpipe.layers[i], s.micro_batch_size, models::DType::fp32);
      EXPECT_EQ(s.input_bytes, bytes.input_bytes) << l.name << " b=" << s.micro_batch_size;
      if (i < 3) {
        EXPECT_EQ(s.output_bytes, bytes.output_bytes) << l.name << " b=" << s.micro_batch_size;
      }
      EXPECT_GT(s.fwd_us, 0);
      EXPECT_GT(s.bwd_us, 0);
      EXPECT_FALSE(s.bwd_input_us.has_value());
    }
  }
  // Activation bytes, as torch's allocator saw them (measured, so exact):
  // a block keeps 264 bytes more than gpipe's (a 256-byte causal mask and an
  // 8-byte scalar), the embedding its 128-byte position index too, the head
  // b x 64 + 8 (int64 targets where gpipe keeps int32, and two scalars).
  const std::vector<std::vector<std::int64_t>> kept{{192, 256}, {35336, 70408}, {35336, 70408}, {8456, 16904}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.layers[i].samples[0].activation_bytes, kept[i][0]) << p.layers[i].name;
    EXPECT_EQ(p.layers[i].samples[1].activation_bytes, kept[i][1]) << p.layers[i].name;
  }
  // The last layer's output is not in a trace: said, as every stand-in is.
  EXPECT_EQ(p.layers[3].samples[0].output_bytes, 0);
  ASSERT_GE(p.not_measured.size(), 4U);
  EXPECT_NE(p.not_measured[2].find("output_bytes of the last layer (Head_0)"), std::string::npos);
  // It is a profile like any other: it reads back equal.
  EXPECT_EQ(profiles::profile_from_json(to_json(p), "round trip"), p);
}

// A built trace: one step of a model Net_0 with children Lin_0 and Lin_1
// (Lin_1 with a child of its own, which is not a layer), times in ns.
struct Built {
  KinetoTrace trace;
  void event(std::string name, std::string cat, std::int64_t start, std::int64_t end,
             std::optional<std::int64_t> sequence = std::nullopt, std::vector<std::vector<std::int64_t>> dims = {},
             std::vector<std::string> types = {}) {
    trace.events.push_back({.name = std::move(name),
                            .category = std::move(cat),
                            .process = "1",
                            .thread = "1",
                            .start_ns = start,
                            .end_ns = end,
                            .sequence_number = sequence,
                            .external_id = std::nullopt,
                            .input_dims = std::move(dims),
                            .input_types = std::move(types)});
  }
  void accumulate(std::int64_t start, std::int64_t scale, std::vector<std::int64_t> dims) {
    event("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "cpu_op", start, start + 4 * scale);
    event("torch::autograd::AccumulateGrad", "cpu_op", start + scale, start + 3 * scale, std::nullopt,
          {std::move(dims)}, {"float"});
  }
  // One step from `t`, its times `scale` times those below (a slower step).
  void step(std::int64_t t, std::int64_t scale = 1, bool modules = true, bool marked = true) {
    const auto at = [&](std::int64_t ns) { return t + scale * ns; };
    if (marked) event("ProfilerStep#" + std::to_string(t), "user_annotation", t, at(1000));
    const char* cat = modules ? "python_function" : "user_annotation";
    if (modules) event("nn.Module: Net_0", cat, at(10), at(400));
    event(modules ? "nn.Module: Lin_0" : "layer0", cat, at(20), at(100));
    event("aten::linear", "cpu_op", at(25), at(60), 1, {{4, 8}, {16, 8}, {16}}, {"float", "float", "float"});
    event("aten::addmm", "cpu_op", at(30), at(59), 1, {{16}, {4, 8}, {8, 16}}, {"float", "float", "float"});
    event("aten::relu", "cpu_op", at(85), at(95), 2, {{4, 16}}, {"float"});
    event(modules ? "nn.Module: Lin_1" : "layer1", cat, at(110), at(300));
    event("aten::linear", "cpu_op", at(115), at(200), 3, {{4, 16}, {8, 16}, {8}}, {"float", "float", "float"});
    if (modules) event("nn.Module: Inner_0", cat, at(210), at(250));
    event("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", at(500), at(540), 3);
    accumulate(at(541), scale, {8, 16});
    accumulate(at(546), scale, {8});
    event("autograd::engine::evaluate_function: ReluBackward0", "cpu_op", at(551), at(561), 2);
    event("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", at(561), at(600), 1);
    accumulate(at(601), scale, {16, 8});
    accumulate(at(606), scale, {16});
    event("autograd::engine::evaluate_function: MeanBackward0", "cpu_op", at(611), at(621), 99);  // no layer's op
    event("Optimizer.step#SGD.step", "user_annotation", at(700), at(800));
    // Alive at the backward's start: 256 bytes from Lin_0, 128 from Lin_1; the rest freed or not a layer's.
    trace.memory.insert(trace.memory.end(), {{at(50), 1, 256, 0}, {at(70), 2, 128, 0}, {at(90), 2, -128, 0},
                                             {at(150), 3, 128, 0}, {at(450), 4, 999, 0}, {at(520), 5, 64, 0}});
  }
  Built() {
    trace.origin = "built.json";
    trace.record_shapes = true;
    trace.profile_memory = true;
  }
};

TEST(TorchTraceProfile, EachRuleInExactNumbers) {
  Built b;
  b.step(0);
  const profiles::Profile p = torch_trace_profile({{b.trace, 4}}, {});
  ASSERT_EQ(p.layers.size(), 2U);  // Inner_0 is Lin_1's child, not a layer
  const profiles::ProfileSample& s0 = p.layers[0].samples.front();
  const profiles::ProfileSample& s1 = p.layers[1].samples.front();
  // Forward: Lin_0's span, 80; Lin_1's 190 and the 10 since Lin_0's ended,
  // and from its end to the backward's start (the model's return, the call
  // into backward), 200.
  EXPECT_DOUBLE_EQ(s0.fwd_us, 0.080);
  EXPECT_DOUBLE_EQ(s1.fwd_us, 0.400);
  // Backward, each function with the gap before it, by sequence number:
  // Lin_1 AddmmBackward0 40 and its two AccumulateGrads 5 each; Lin_0
  // ReluBackward0 11, AddmmBackward0 39, its AccumulateGrads 5 each, and
  // MeanBackward0 11 (no layer's op: the layer whose backward ran before it).
  EXPECT_DOUBLE_EQ(s1.bwd_us, 0.050);
  EXPECT_DOUBLE_EQ(s0.bwd_us, 0.071);
  EXPECT_EQ(p.layers[0].param_bytes, (16 * 8 + 16) * 4);  // the AccumulateGrads after its backward
  EXPECT_EQ(p.layers[1].param_bytes, (8 * 16 + 8) * 4);
  EXPECT_EQ(s0.input_bytes, 4 * 8 * 4);  // [4, 8]: not a parameter's shape
  EXPECT_EQ(s1.input_bytes, 4 * 16 * 4);
  EXPECT_EQ(s0.output_bytes, s1.input_bytes);
  EXPECT_EQ(s1.output_bytes, 0);
  EXPECT_EQ(s0.activation_bytes, 128);        // kept 256, less its output 256, plus its input 128
  EXPECT_EQ(s1.activation_bytes, 128 + 256);  // kept 128, plus its input
  // The step's own, 20 before Lin_0 and 379 after the backward (the
  // optimizer's 100 in it), shared by parameter bytes: 576 and 544 of 1120.
  EXPECT_DOUBLE_EQ(p.layers[0].optimizer_us, 0.399 * 576 / 1120);
  EXPECT_DOUBLE_EQ(p.layers[1].optimizer_us, 0.399 * 544 / 1120);
  // Nothing left out: the passes and the step's own are the step's 1000 ns.
  double sum = 0;
  for (const profiles::LayerProfile& l : p.layers) sum += l.samples.front().fwd_us + l.samples.front().bwd_us + l.optimizer_us;
  EXPECT_NEAR(sum, 1.000, 1e-12);
  EXPECT_EQ(p.model, "torch:Net_0");
  EXPECT_NE(p.not_measured.back().find("autograd functions up to 0.0 us of no layer's ops"), std::string::npos)
      << p.not_measured.back();
}

TEST(TorchTraceProfile, TimesAreTheMedianOverTheSteps) {
  Built b;
  b.step(0, 1);
  b.step(10'000, 3);
  b.step(20'000, 2);
  const profiles::Profile p = torch_trace_profile({{b.trace, 1}}, {});
  EXPECT_DOUBLE_EQ(p.layers[0].samples.front().fwd_us, 0.160);  // Lin_0's span, the median of 80, 240, 160
}

TEST(TorchTraceProfile, AnUnmarkedTraceIsSplitByTheModelsForwardAndAStepCanBeChosen) {
  Built b;
  b.step(0, 1, true, /*marked=*/false);
  b.step(10'000, 3, true, false);
  b.step(20'000, 2, true, false);
  const profiles::Profile p = torch_trace_profile({{b.trace, 1}}, {});
  EXPECT_DOUBLE_EQ(p.layers[0].samples.front().fwd_us, 0.160);  // the median of 80, 240 and 160
  EXPECT_NE(p.measured_from.find("3 steps by the forward of module Net_0, "), std::string::npos) << p.measured_from;
  EXPECT_NE(p.measured_from.find("each time the median of the steps"), std::string::npos) << p.measured_from;
  const profiles::Profile second = torch_trace_profile({{b.trace, 1}}, {.step = 2});
  EXPECT_DOUBLE_EQ(second.layers[0].samples.front().fwd_us, 0.240);
  EXPECT_NE(second.measured_from.find("step 2 taken"), std::string::npos) << second.measured_from;
  // Step 2 runs from its forward's start (10,030) to the next one's (20,020):
  // all 9,990 ns of it are in the layers' passes and the step's own.
  double sum = 0;
  for (const profiles::LayerProfile& l : second.layers) {
    sum += l.samples.front().fwd_us + l.samples.front().bwd_us + l.optimizer_us;
  }
  EXPECT_NEAR(sum, 9.989, 1e-9);
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)torch_trace_profile({{b.trace, 1}}, {.step = 4}); }),
            "built.json: --step 4: the trace has 3 steps (split by the forward of module Net_0); give 1 to 3");
}

TEST(TorchTraceProfile, FourStepsTakenTheOrdinaryWayReadAsFourSteps) {
  // torch 2.15 wrote these (make_step_traces.py): four steps each, the first
  // without prof.step(). Read as one step, the unmarked trace's optimizer
  // summed four steps' and every later step's backward fell in no layer.
  const auto unmarked = torch_trace_profile({{read_kineto_trace(torch_data("steps_unmarked.json")), 1}}, {});
  const auto marked =
      torch_trace_profile({{read_kineto_trace(torch_data("steps_marked.json")), 1}}, {.no_activation_bytes = true});
  EXPECT_NE(unmarked.measured_from.find("4 steps by the forward of module GPT_0"), std::string::npos);
  EXPECT_NE(marked.measured_from.find("4 steps by ProfilerStep#N spans"), std::string::npos);
  ASSERT_EQ(unmarked.layers.size(), 4U);
  ASSERT_EQ(marked.layers.size(), 4U);
  double unmarked_optimizer = 0, marked_optimizer = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(unmarked.layers[i].param_bytes, marked.layers[i].param_bytes) << unmarked.layers[i].name;
    unmarked_optimizer += unmarked.layers[i].optimizer_us;
    marked_optimizer += marked.layers[i].optimizer_us;
  }
  // One step's optimizer each: the same AdamW on the same model, within the
  // two runs' noise (a factor of 4 would be four steps' read as one).
  EXPECT_LT(unmarked_optimizer, 2 * marked_optimizer);
  EXPECT_GT(unmarked_optimizer, 0.5 * marked_optimizer);
  // Nothing left out: the layers' medians sum to the median step within 2 %
  // (each ns of a step is a layer's pass or the step's own, and the medians
  // of the parts are near the median of the whole).
  const TraceSteps split = split_trace_steps(read_kineto_trace(torch_data("steps_unmarked.json")), std::nullopt);
  std::vector<double> spans;
  for (const TraceStep& t : split.steps) spans.push_back(static_cast<double>(t.end_ns - t.start_ns) / 1e3);
  std::ranges::sort(spans);
  const double median_step = (spans[1] + spans[2]) / 2;
  double sum = 0;
  for (const profiles::LayerProfile& l : unmarked.layers) {
    sum += l.samples.front().fwd_us + l.samples.front().bwd_us + l.optimizer_us;
  }
  EXPECT_NEAR(sum / median_step, 1.0, 0.02) << sum << " us against the median step's " << median_step;
}

TEST(TorchTraceProfile, RecordFunctionLabelsNameTheLayersWithLayers) {
  Built b;
  b.step(0, 1, /*modules=*/false);
  const profiles::Profile p = torch_trace_profile({{b.trace, 1}}, {.layers = "layer[0-9]+"});
  ASSERT_EQ(p.layers.size(), 2U);
  EXPECT_EQ(p.layers[0].name, "layer0");
  EXPECT_EQ(p.layers[0].kind, "record_function");
  EXPECT_DOUBLE_EQ(p.layers[0].samples.front().bwd_us, 0.071);  // as by modules: ReluBackward0, AddmmBackward0, AccumulateGrads, MeanBackward0
  EXPECT_EQ(p.model, "torch:record_function layers");
}

std::string import_error(const std::vector<TorchTrace>& traces, const TorchTraceOptions& options = {}) {
  return gpipe::testing::error_of([&] { (void)torch_trace_profile(traces, options); });
}

TEST(TorchTraceProfile, ATraceItCannotReadIsOneLineSayingWhatIsMissing) {
  Built good;
  good.step(0);
  Built labels;
  labels.step(0, 1, false);
  EXPECT_EQ(import_error({{labels.trace, 1}}),
            "built.json: no module events: profile an eager model with with_stack=True (which writes \"nn.Module: "
            "Block_0\" events), or give --layers naming the record_function labels around each layer");
  EXPECT_EQ(import_error({{good.trace, 1}}, {.layers = "Conv.*"}), "built.json: no module or record_function label matches --layers 'Conv.*'");
  // Two forwards of a layer inside one ProfilerStep (a micro-batch loop): no split reads it right,
  // and the marked step's advice is not to mark the steps.
  Built twice = good;
  twice.event("nn.Module: Lin_0", "python_function", 310, 320);
  std::ranges::stable_sort(twice.trace.events, [](const KinetoEvent& a, const KinetoEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  EXPECT_EQ(import_error({{twice.trace, 1}}),
            "built.json: layer Lin_0 runs twice in step 1 (a ProfilerStep#N span): a micro-batch loop inside a "
            "step, or a module the forward calls twice, is not read as layers; call prof.step() after each "
            "micro-batch's backward, or give --layers naming labels that each run once a step");
  EXPECT_EQ(import_error({{good.trace, 1}}, {.layers = "(("}).rfind("--layers: '((' is not a regular expression", 0), 0U);
  Built no_memory = good;
  no_memory.trace.memory.clear();
  EXPECT_EQ(import_error({{no_memory.trace, 1}}).rfind("built.json: no memory events, so activation bytes cannot be measured: "
                                                    "profile with profile_memory=True, or give --no-activation-bytes", 0),
            0U);
  const profiles::Profile without = torch_trace_profile({{no_memory.trace, 1}}, {.no_activation_bytes = true});
  EXPECT_EQ(without.layers[1].samples.front().activation_bytes, without.layers[1].samples.front().input_bytes);
  EXPECT_TRUE(std::ranges::any_of(without.not_measured, [](const std::string& line) {
    return line.starts_with("activation_bytes: no memory events");
  }));
  Built no_shapes = good;
  no_shapes.trace.record_shapes = false;
  EXPECT_EQ(import_error({{no_shapes.trace, 1}}).rfind("built.json: recorded without shapes: profile with record_shapes=True", 0), 0U);
  Built gpu = good;
  gpu.trace.device_names = {"NVIDIA H100 80GB HBM3"};
  EXPECT_EQ(import_error({{gpu.trace, 1}}).rfind("built.json: a GPU trace (NVIDIA H100 80GB HBM3): gpipe reads CPU traces so far", 0), 0U);
  Built forward_only = good;
  std::erase_if(forward_only.trace.events, [](const KinetoEvent& e) { return e.name.starts_with("autograd::"); });
  EXPECT_EQ(import_error({{forward_only.trace, 1}}).rfind("built.json: no backward after the forward", 0), 0U);
  EXPECT_EQ(import_error({{good.trace, 2}, {good.trace, 2}}), "built.json: micro-batch size 2 is given twice: one trace a size");
  EXPECT_EQ(import_error({{good.trace, 0}}), "built.json: micro-batch size 0 must be at least 1");
  Built other;
  other.step(0, 1, false);
  EXPECT_EQ(import_error({{good.trace, 1}, {other.trace, 2}}, {.layers = "Lin_.*|layer.*"}),
            "built.json: its layers (layer0, layer1) are not the first trace's (Lin_0, Lin_1)");
  EXPECT_EQ(import_error({}), "--from-torch-trace: no trace given");
}

}  // namespace
}  // namespace gpipe::interop
