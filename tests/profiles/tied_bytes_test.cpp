// A tied embedding in a profile: the first and the last layer give the
// matrix's bytes, equal, or neither does (LayerProfile::tied_bytes).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/model_spec.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "profiles/profile.hpp"
#include "profiles/stage_costs.hpp"
#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

using gpipe::testing::error_of;

const int kTiedProfileSizes[] = {1};

// V 10, H 8: the tied matrix is 80 elements, 160 bytes in bf16.
Profile tied_llama_profile() {
  return analytic_profile(models::parse_model("llama:layers=2,hidden=8,heads=2,ffn=16,seq=4,vocab=10,tied=1"),
                          device_named("h100"), models::DType::bf16, kTiedProfileSizes);
}

TEST(TiedBytes, TheAnalyticProfileGivesTheEndsTheMatrix) {
  const Profile p = tied_llama_profile();
  EXPECT_EQ(p.tied_bytes(), 160);
  EXPECT_EQ(p.layers.front().tied_bytes, 160);
  EXPECT_EQ(p.layers.back().tied_bytes, 160);
  EXPECT_EQ(p.layers[1].tied_bytes, 0);
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
  const int per_stage[] = {2, 2};
  const auto stages = stage_costs(p, per_stage, 1);
  EXPECT_EQ(stages[0].tied_bytes, 160);
  EXPECT_EQ(stages[1].tied_bytes, 160);
  // Untied: no field, 0.
  const Profile untied = analytic_profile(models::parse_model("llama:layers=2,hidden=8,heads=2,ffn=16,seq=4,vocab=10"),
                                          device_named("h100"), models::DType::bf16, kTiedProfileSizes);
  EXPECT_EQ(untied.tied_bytes(), 0);
  EXPECT_FALSE(to_json(untied)["layers"][0].contains("tied_bytes"));
}

TEST(TiedBytes, OnlyTheEndsShareAndBothSaySo) {
  nlohmann::json j = to_json(tied_llama_profile());
  nlohmann::json middle = j;
  middle["layers"][1]["tied_bytes"] = 160;
  EXPECT_EQ(error_of([&] { (void)profile_from_json(middle, "p.json"); }),
            "p.json: layers[1].tied_bytes: only the first and the last layer may share a matrix (a tied embedding)");
  nlohmann::json one_end = j;
  one_end["layers"][3].erase("tied_bytes");
  EXPECT_EQ(error_of([&] { (void)profile_from_json(one_end, "p.json"); }),
            "p.json: layers[3].tied_bytes: layers[0] gives 160 and layers[3] gives 0: the first and the last layer "
            "share one matrix, so both give its bytes");
}

}  // namespace
}  // namespace gpipe::profiles
