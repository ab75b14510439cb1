// The profile format: the golden files load (or fail naming exactly the field
// at fault), the docs/design.md example parses, and writing then reading is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "profiles/profile.hpp"

namespace gpipe::profiles {
namespace {

using nlohmann::json;

std::filesystem::path data(const std::string& name) {
  return std::filesystem::path(GPIPE_TEST_DATA_DIR) / "profiles" / name;
}

// The message of the InputError that `read` throws; fails the test if none.
template <typename Read>
std::string profile_error_of(Read read) {
  try {
    (void)read();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

std::filesystem::path temp_file(const std::string& name) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::filesystem::path(::testing::TempDir()) /
         (std::string(test->test_suite_name()) + "_" + test->name() + "_" + name);
}

TEST(ProfileLoad, ReadsEveryFieldOfAValidFile) {
  const Profile p = load_profile(data("valid_two_layers.json"));
  EXPECT_EQ(p.device, "test device");
  EXPECT_EQ(p.source, "analytic");
  EXPECT_EQ(p.dtype, "fp32");
  EXPECT_EQ(p.model, "mlp:layers=2,hidden=8");
  EXPECT_EQ(p.link, (Link{5.0, 25.0}));
  ASSERT_EQ(p.layers.size(), 2u);

  const LayerProfile& block = p.layers[0];
  EXPECT_EQ(block.name, "block0");
  EXPECT_EQ(block.kind, "mlp_block");
  EXPECT_EQ(block.param_bytes, 1000);
  EXPECT_EQ(block.optimizer_us, 2.5);
  EXPECT_TRUE(block.has_split_backward());
  ASSERT_EQ(block.samples.size(), 2u);
  // The file lists size 4 before size 2: the loader sorts.
  EXPECT_EQ(block.samples[0], (ProfileSample{2, 20.5, 41.0, 15.25, 25.75, 200, 200, 1000}));
  EXPECT_EQ(block.samples[1], (ProfileSample{4, 40.0, 80.0, 30.0, 50.0, 400, 400, 2000}));

  const LayerProfile& head = p.layers[1];
  EXPECT_EQ(head.name, "head");
  EXPECT_EQ(head.optimizer_us, 0.0);  // absent: STEP costs nothing
  EXPECT_FALSE(head.has_split_backward());
  ASSERT_EQ(head.samples.size(), 1u);
  EXPECT_EQ(head.samples[0],
            (ProfileSample{2, 10.0, 20.0, std::nullopt, std::nullopt, 200, 16, 300}));
}

TEST(ProfileLoad, ParsesTheDesignExample) {
  const Profile p = load_profile(data("design_example.json"));
  EXPECT_EQ(p.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.source, "cupti");
  EXPECT_EQ(p.dtype, "bf16");
  EXPECT_EQ(p.model, "transformer:layers=24,hidden=1024,heads=16,seq=1024");
  EXPECT_EQ(p.link, (Link{5.0, 25.0}));
  ASSERT_EQ(p.layers.size(), 1u);
  EXPECT_EQ(p.layers[0].name, "block0");
  EXPECT_EQ(p.layers[0].kind, "transformer_block");
  EXPECT_EQ(p.layers[0].param_bytes, 25165824);
  ASSERT_EQ(p.layers[0].samples.size(), 1u);
  EXPECT_EQ(p.layers[0].samples[0], (ProfileSample{8, 812.0, 1650.0, 820.0, 830.0, 16777216,
                                                   16777216, 201326592}));
}

struct InvalidCase {
  const char* file;
  const char* message;  // what follows "PATH: "
};

class ProfileInvalidFile : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ProfileInvalidFile, NamesTheFieldAtFault) {
  const auto path = data(GetParam().file);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_EQ(profile_error_of([&] { return load_profile(path); }),
            path.string() + ": " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    GoldenFiles, ProfileInvalidFile,
    ::testing::Values(
        InvalidCase{"invalid_root_array.json", "expected a JSON object"},
        InvalidCase{"invalid_format.json", "format: expected \"gpipe-profile\""},
        InvalidCase{"invalid_version.json",
                    "version: unsupported version 2 (this build reads version 1)"},
        InvalidCase{"invalid_missing_device.json", "device: is missing"},
        InvalidCase{"invalid_source.json",
                    "source: expected one of cupti, cpu, analytic (got 'gpu')"},
        InvalidCase{"invalid_dtype_not_string.json", "dtype: expected a string"},
        InvalidCase{"invalid_link_latency.json", "link.latency_us: expected a non-negative number"},
        InvalidCase{"invalid_link_bandwidth.json", "link.bandwidth_GBps: expected a positive number"},
        // Past what the engine's integer ns and bytes hold (profiles/limits.hpp).
        InvalidCase{"invalid_fwd_us_too_long.json",
                    "layers[0].samples[0].fwd_us: 1e+16 us is more than the 1e+12 us (11.6 days) a time may be"},
        InvalidCase{"invalid_link_bandwidth_tiny.json",
                    "link.bandwidth_GBps: 1e-300 GB/s is outside the 1e-06 to 1e+09 GB/s a link may have"},
        InvalidCase{"invalid_param_bytes_huge.json",
                    "layers[1].param_bytes: 9223372036854775807 bytes is more than the 2^50 (1 PiB) a size may be"},
        InvalidCase{"invalid_link_points_unordered.json",
                    "link.measured.points[1].bytes: must be larger than the point before"},
        InvalidCase{"invalid_link_points_empty.json", "link.measured.points: expected a non-empty array"},
        InvalidCase{"invalid_no_layers.json", "layers: expected a non-empty array"},
        InvalidCase{"invalid_layer_not_object.json", "layers[0]: expected an object"},
        InvalidCase{"invalid_duplicate_layer_name.json",
                    "layers[1].name: duplicate layer name 'block0' (also layers[0])"},
        InvalidCase{"invalid_empty_layer_name.json", "layers[0].name: expected a non-empty string"},
        InvalidCase{"invalid_missing_kind.json", "layers[1].kind: is missing"},
        InvalidCase{"invalid_param_bytes.json",
                    "layers[0].param_bytes: expected a non-negative integer"},
        InvalidCase{"invalid_optimizer_us.json",
                    "layers[0].optimizer_us: expected a non-negative number"},
        InvalidCase{"invalid_no_samples.json", "layers[1].samples: expected a non-empty array"},
        InvalidCase{"invalid_micro_batch_size.json",
                    "layers[0].samples[0].micro_batch_size: expected a positive integer"},
        InvalidCase{"invalid_duplicate_micro_batch_size.json",
                    "layers[0].samples[1].micro_batch_size: duplicate size 4 (also samples[0])"},
        InvalidCase{"invalid_fwd_us.json",
                    "layers[1].samples[0].fwd_us: expected a non-negative number"},
        InvalidCase{"invalid_bwd_us_string.json",
                    "layers[0].samples[0].bwd_us: expected a non-negative number"},
        InvalidCase{"invalid_fractional_bytes.json",
                    "layers[0].samples[0].input_bytes: expected a non-negative integer"},
        InvalidCase{"invalid_bwd_input_without_weight.json",
                    "layers[0].samples[0].bwd_weight_us: is missing, but bwd_input_us is given "
                    "(give both or neither)"},
        InvalidCase{"invalid_split_backward_mixed.json",
                    "layers[0].samples[1].bwd_input_us: is missing, but samples[0] of this "
                    "layer gives it"},
        InvalidCase{"invalid_activation_below_input.json",
                    "layers[0].samples[0].activation_bytes: 399 is less than input_bytes 400 (it "
                    "includes the layer's input)"},
        InvalidCase{"invalid_weight_grad_stash_above_activation.json",
                    "layers[0].samples[0].weight_grad_stash_bytes: 1001 exceeds activation_bytes "
                    "1000 (it is the share of them that W keeps)"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find('.'));
      return name;
    });

TEST(ProfileLoad, NamesAMissingFile) {
  const auto path = data("no_such_profile.json");
  EXPECT_EQ(profile_error_of([&] { return load_profile(path); }),
            path.string() + ": cannot read: No such file or directory");
}

TEST(ProfileLoad, NamesAFileThatIsNotJson) {
  const auto path = data("invalid_not_json.json");
  const std::string message = profile_error_of([&] { return load_profile(path); });
  EXPECT_EQ(message.rfind(path.string() + ": not valid JSON: parse error at line 2", 0), 0u)
      << message;
}

TEST(ProfileLoad, ANumberPastADoubleIsBadJsonNotACrash) {
  const auto path = data("invalid_number_overflow.json");
  EXPECT_EQ(profile_error_of([&] { return load_profile(path); }),
            path.string() + ": not valid JSON: number overflow parsing '1e400'");
}

TEST(ProfileLoad, NamesADirectory) {
  const auto path = data("");
  EXPECT_EQ(profile_error_of([&] { return load_profile(path); }),
            path.string() + ": cannot read: is a directory");
}

// Values no JSON text can hold, or that a file rarely has, built in memory.
class ProfileFromJson : public ::testing::Test {
 protected:
  json doc_ = json::parse(R"({"format": "gpipe-profile", "version": 1, "device": "d",
    "source": "cpu", "dtype": "fp32", "model": "m",
    "link": {"latency_us": 0, "bandwidth_GBps": 1},
    "layers": [{"name": "a", "kind": "k", "param_bytes": 0, "samples": [
      {"micro_batch_size": 1, "fwd_us": 0, "bwd_us": 0,
       "input_bytes": 0, "output_bytes": 0, "activation_bytes": 0}]}]})");
  json& sample_ = doc_["layers"][0]["samples"][0];

  std::string error() {
    return profile_error_of([&] { return profile_from_json(doc_, "inline"); });
  }
};

TEST_F(ProfileFromJson, AcceptsZerosAndIntegerTimes) {
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.layers[0].samples[0], (ProfileSample{1, 0, 0, {}, {}, 0, 0, 0}));
}

TEST_F(ProfileFromJson, RejectsNonFiniteTimes) {
  sample_["fwd_us"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(error(), "inline: layers[0].samples[0].fwd_us: expected a non-negative number");
  sample_["fwd_us"] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(error(), "inline: layers[0].samples[0].fwd_us: expected a non-negative number");
}

TEST_F(ProfileFromJson, RejectsBooleansAsNumbers) {
  sample_["bwd_us"] = true;
  EXPECT_EQ(error(), "inline: layers[0].samples[0].bwd_us: expected a non-negative number");
}

TEST_F(ProfileFromJson, RejectsBytesBeyondInt64) {
  sample_["output_bytes"] = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(error(), "inline: layers[0].samples[0].output_bytes: expected a non-negative integer");
}

TEST_F(ProfileFromJson, RejectsAFractionalOrHugeMicroBatchSize) {
  sample_["micro_batch_size"] = 1.5;
  EXPECT_EQ(error(), "inline: layers[0].samples[0].micro_batch_size: expected a positive integer");
  sample_["micro_batch_size"] = std::int64_t{1} << 40;
  EXPECT_EQ(error(), "inline: layers[0].samples[0].micro_batch_size: expected a positive integer");
}

TEST_F(ProfileFromJson, RejectsWeightGradientWithoutInputGradient) {
  sample_["bwd_weight_us"] = 1.0;
  EXPECT_EQ(error(), "inline: layers[0].samples[0].bwd_input_us: is missing, but bwd_weight_us "
                     "is given (give both or neither)");
}

TEST_F(ProfileFromJson, RejectsASplitThatOnlyLaterSamplesGive) {
  json second = sample_;
  second["micro_batch_size"] = 2;
  second["bwd_input_us"] = 0.5;
  second["bwd_weight_us"] = 0.5;
  doc_["layers"][0]["samples"].push_back(second);
  EXPECT_EQ(error(), "inline: layers[0].samples[1].bwd_input_us: is given, but samples[0] of "
                     "this layer has no split backward");
}

TEST_F(ProfileFromJson, RejectsAMissingSampleField) {
  sample_.erase("activation_bytes");
  EXPECT_EQ(error(), "inline: layers[0].samples[0].activation_bytes: is missing");
}

TEST_F(ProfileFromJson, ReadsContentionPointsAndRefusesBadOnes) {
  doc_["contention"] = json::parse(R"([{"busy_peers": 1, "slowdown": 0.03}, {"busy_peers": 3, "slowdown": 0.1}])");
  EXPECT_EQ(profile_from_json(doc_, "inline").contention,
            (std::vector<ContentionPoint>{{1, 0.03}, {3, 0.1}}));
  doc_["contention"][1]["busy_peers"] = 1;
  EXPECT_EQ(error(), "inline: contention[1].busy_peers: must be larger than the point before");
  doc_["contention"][1]["busy_peers"] = 0;
  EXPECT_EQ(error(), "inline: contention[1].busy_peers: expected a positive integer");
  doc_["contention"][1]["busy_peers"] = 2;
  doc_["contention"][1]["slowdown"] = -0.1;
  EXPECT_EQ(error(), "inline: contention[1].slowdown: expected a non-negative number");
  doc_["contention"][1]["slowdown"] = 1000;
  EXPECT_EQ(error(), "inline: contention[1].slowdown: 1000 is more than the 100 a slowdown may be");
  doc_["contention"] = json::array();
  EXPECT_EQ(error(), "inline: contention: expected a non-empty array");
}

TEST_F(ProfileFromJson, ReadsStateBytesAndRefusesBadOnes) {
  EXPECT_FALSE(profile_from_json(doc_, "inline").layers[0].samples[0].state_bytes.has_value());
  doc_["layers"][0]["samples"][0]["state_bytes"] = 4096;
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.layers[0].samples[0].state_bytes, 4096);
  EXPECT_EQ(profile_from_json(to_json(p), "again"), p);  // written back
  doc_["layers"][0]["samples"][0]["state_bytes"] = -1;
  EXPECT_TRUE(error().starts_with("inline: layers[0].samples[0].state_bytes: ")) << error();
}

TEST_F(ProfileFromJson, ReadsTheCollectivesFitAndRefusesABadOne) {
  doc_["link"]["collective"] = {{"latency_us", 12.5}, {"bandwidth_GBps", 40}};
  const Profile p = profile_from_json(doc_, "inline");
  ASSERT_TRUE(p.link.collective.has_value());
  EXPECT_EQ(*p.link.collective, (CollectiveLink{.latency_us = 12.5, .bandwidth_GBps = 40}));
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
  doc_["link"]["collective"]["bandwidth_GBps"] = 0;
  EXPECT_EQ(error(), "inline: link.collective.bandwidth_GBps: expected a positive number");
  doc_["link"]["collective"] = 3;
  EXPECT_EQ(error(), "inline: link.collective: expected an object");
}

TEST_F(ProfileFromJson, ReadsTheReduceScatterAndAllGatherFits) {
  doc_["link"]["collective"] = {{"latency_us", 0.5},
                                {"bandwidth_GBps", 3},
                                {"reduce_scatter", {{"latency_us", 1}, {"bandwidth_GBps", 2.25}}},
                                {"all_gather", {{"latency_us", 0.75}, {"bandwidth_GBps", 11}}}};
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.link.reduce_scatter, (CollectiveLink{.latency_us = 1, .bandwidth_GBps = 2.25}));
  EXPECT_EQ(p.link.all_gather, (CollectiveLink{.latency_us = 0.75, .bandwidth_GBps = 11}));
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
  doc_["link"]["collective"]["all_gather"]["latency_us"] = -1;
  EXPECT_TRUE(error().starts_with("inline: link.collective.all_gather.latency_us: ")) << error();
}

TEST_F(ProfileFromJson, ReadsTheContextCollectivesAsTheBlocksRanThem) {
  doc_["link"]["context_collectives"] = {{"all_gather", {{"latency_us", 6}, {"bandwidth_GBps", 5.5}}},
                                         {"reduce_scatter", {{"latency_us", 5}, {"bandwidth_GBps", 2.5}}}};
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.link.context_all_gather, (CollectiveLink{.latency_us = 6, .bandwidth_GBps = 5.5}));
  EXPECT_EQ(p.link.context_reduce_scatter, (CollectiveLink{.latency_us = 5, .bandwidth_GBps = 2.5}));
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
  doc_["link"]["context_collectives"]["reduce_scatter"]["bandwidth_GBps"] = 0;
  EXPECT_EQ(error(), "inline: link.context_collectives.reduce_scatter.bandwidth_GBps: expected a positive number");
  doc_["link"]["context_collectives"] = 1;
  EXPECT_EQ(error(), "inline: link.context_collectives: expected an object");
}

TEST_F(ProfileFromJson, ReadsTheTensorCollectivesAsTheBlocksRanThem) {
  doc_["link"]["tensor_collectives"] = {{"all_reduce", {{"latency_us", 4}, {"bandwidth_GBps", 1.5}}}};
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.link.tensor_all_reduce, (CollectiveLink{.latency_us = 4, .bandwidth_GBps = 1.5}));
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
  doc_["link"]["tensor_collectives"]["all_reduce"]["latency_us"] = -1;
  EXPECT_TRUE(error().starts_with("inline: link.tensor_collectives.all_reduce.latency_us: ")) << error();
  doc_["link"]["tensor_collectives"] = "fast";
  EXPECT_EQ(error(), "inline: link.tensor_collectives: expected an object");
}

TEST_F(ProfileFromJson, ReadsTheContextFormAndRefusesOneWithoutAGroup) {
  doc_["context_parallel"] = 2;
  EXPECT_EQ(profile_from_json(doc_, "inline").context_form, models::ContextParallelForm::all_gather);
  EXPECT_FALSE(to_json(profile_from_json(doc_, "inline")).contains("context_parallel_form"));  // the default unsaid
  doc_["context_parallel_form"] = "ring";
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.context_form, models::ContextParallelForm::ring);
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
  doc_["context_parallel_form"] = "tree";
  EXPECT_EQ(error(), "inline: context_parallel_form: 'tree' is neither all-gather nor ring");
  doc_["context_parallel_form"] = "ring";
  doc_.erase("context_parallel");
  EXPECT_EQ(error(), "inline: context_parallel_form: a form of context parallelism needs a context_parallel of 2 or more");
}

TEST_F(ProfileFromJson, ReadsTheWorkloadAndRefusesAnUnknownOne) {
  EXPECT_EQ(profile_from_json(doc_, "inline").workload, "training");
  EXPECT_FALSE(to_json(profile_from_json(doc_, "inline")).contains("workload"));  // the default stays unsaid
  doc_["workload"] = "inference";
  const Profile p = profile_from_json(doc_, "inline");
  EXPECT_EQ(p.workload, "inference");
  EXPECT_EQ(profile_from_json(to_json(p), "again"), p);
  doc_["workload"] = "serving";
  EXPECT_EQ(error(), "inline: workload: 'serving' is neither training nor inference");
}

TEST(ProfileRoundTrip, WriteThenReadIsEqual) {
  const Profile original = load_profile(data("valid_two_layers.json"));
  const auto path = temp_file("profile.json");
  write_profile(original, path);
  EXPECT_EQ(load_profile(path), original);
  std::filesystem::remove(path);
}

// write_profile streams a layer at a time (so that running out of memory in
// it is one line, not std::terminate); its text is still dump(2)'s, byte for byte.
TEST(ProfileRoundTrip, StreamedTextEqualsTheWholeDump) {
  Profile p = load_profile(data("valid_two_layers.json"));
  p.link.measured_with = "MPI ping-pong";
  p.link.points = {{8, 1.5}, {1 << 20, 40.25}};
  p.contention = {{1, 0.03}};
  const auto path = temp_file("streamed.json");
  write_profile(p, path);
  EXPECT_EQ(read_text_file(path), to_json(p).dump(2) + "\n");
  EXPECT_EQ(load_profile(path), p);
  std::filesystem::remove(path);
}

TEST(ProfileRoundTrip, KeepsEveryDoubleBitForBit) {
  Profile p = load_profile(data("design_example.json"));
  ProfileSample& s = p.layers[0].samples[0];
  s.fwd_us = 0.1;
  s.bwd_us = 1.0 / 3.0;
  s.bwd_input_us = 1e-7;
  s.bwd_weight_us = 123456.789;
  p.layers[0].optimizer_us = 2.0 / 7.0;
  p.link = Link{0.3, 12.5};
  const json written = to_json(p);
  EXPECT_EQ(profile_from_json(json::parse(written.dump()), "dumped"), p);
}

TEST(ProfileRoundTrip, WritesTheFormatAndOmitsAZeroOptimizerCost) {
  const Profile p = load_profile(data("valid_two_layers.json"));
  const json written = to_json(p);
  EXPECT_EQ(written.at("format"), "gpipe-profile");
  EXPECT_EQ(written.at("version"), 1);
  EXPECT_EQ(written.at("layers").at(0).at("optimizer_us"), 2.5);
  EXPECT_FALSE(written.at("layers").at(1).contains("optimizer_us"));
  EXPECT_FALSE(written.at("layers").at(1).at("samples").at(0).contains("bwd_input_us"));
  // Byte counts stay JSON integers, which the loader requires.
  EXPECT_TRUE(written.at("layers").at(0).at("samples").at(0).at("input_bytes").is_number_integer());
}

TEST(ProfileWrite, NamesAnUnwritablePath) {
  const Profile p = load_profile(data("design_example.json"));
  const auto path = std::filesystem::path(::testing::TempDir()) / "no_such_dir" / "p.json";
  EXPECT_EQ(profile_error_of([&] {
                      write_profile(p, path);
                      return 0;
                    }),
            path.string() + ": cannot write: No such file or directory");
}

}  // namespace
}  // namespace gpipe::profiles
