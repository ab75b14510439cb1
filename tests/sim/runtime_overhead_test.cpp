// A runtime's cost file (sim/runtime_overhead.hpp): read exactly, in ns, and
// every malformed one a single InputError naming the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/files.hpp"
#include "schedules/action.hpp"
#include "sim/runtime_overhead.hpp"
#include "tests/error_of.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;

const std::string kGood = R"json({
  "format": "gpipe runtime overhead", "runtime": "torch.distributed.pipelining", "version": "2.15.0",
  "backend": "gloo", "device": "CPU (vm)", "measured_by": "scripts/fit-torch-overhead ...",
  "fitted_on": ["r0.json", "r1.json"],
  "per_action_us": {"F": 29.2, "WAIT_SEND_F": 34.6}, "per_layer_us": {"B": 295.6}, "transfer_us": 957.8
})json";

std::filesystem::path written(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("gpipe-runtime-overhead-" + name + ".json");
  write_text_file(path, text);
  return path;
}

std::string error_of_text(const std::string& name, const std::string& text) {
  const auto path = written(name, text);
  return gpipe::testing::error_of([&] { (void)read_runtime_overhead(path); });
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(RuntimeOverhead, ReadsEveryFieldInNanoseconds) {
  const RuntimeOverhead o = read_runtime_overhead(written("good", kGood));
  EXPECT_EQ(o.runtime, "torch.distributed.pipelining");
  EXPECT_EQ(o.version, "2.15.0");
  EXPECT_EQ(o.backend, "gloo");
  EXPECT_EQ(o.fitted_on, (std::vector<std::string>{"r0.json", "r1.json"}));
  EXPECT_EQ(o.per_action, (ActionOverheads{{ActionKind::F, 29'200}, {ActionKind::WAIT_SEND_F, 34'600}}));
  EXPECT_EQ(o.per_layer, (ActionOverheads{{ActionKind::B, 295'600}}));
  EXPECT_DOUBLE_EQ(o.transfer_us, 957.8);
  EXPECT_EQ(describe(o), "torch.distributed.pipelining 2.15.0 (gloo) on CPU (vm): F=29.2 us, WAIT_SEND_F=34.6 us "
                         "an action; B=295.6 us a layer; transfers 957.8 us");
}

TEST(RuntimeOverhead, RefusesWhatIsNotOneInOneLine) {
  const auto path = std::filesystem::temp_directory_path() / "gpipe-runtime-overhead-";
  EXPECT_EQ(error_of_text("format", replaced(kGood, "gpipe runtime overhead", "a profile")),
            path.string() + "format.json: format: expected \"gpipe runtime overhead\" (a file of "
                            "scripts/fit-torch-overhead)");
  EXPECT_EQ(error_of_text("send", replaced(kGood, "\"F\": 29.2", "\"SEND_F\": 1")),
            path.string() + "send.json: per_action_us: 'SEND_F' is not a kind of action on the compute stream (F, B, "
                            "I, W, WAIT_SEND_F, UNSHARD, ...; the transfers are transfer_us)");
  EXPECT_EQ(error_of_text("negative", replaced(kGood, "295.6", "-1")),
            path.string() + "negative.json: per_layer_us.B: expected a non-negative number");
  EXPECT_EQ(error_of_text("huge", replaced(kGood, "957.8", "2e9")),
            path.string() + "huge.json: transfer_us: more than 1e9 us");
  EXPECT_EQ(error_of_text("missing", replaced(kGood, "\"backend\": \"gloo\",", "")),
            path.string() + "missing.json: backend: is missing");
  EXPECT_EQ(error_of_text("traces", replaced(kGood, "[\"r0.json\", \"r1.json\"]", "[]")),
            path.string() + "traces.json: fitted_on: expected a non-empty array");
  EXPECT_EQ(error_of_text("json", "{").rfind(path.string() + "json.json: not valid JSON", 0), 0U);
}

}  // namespace
}  // namespace gpipe::sim
