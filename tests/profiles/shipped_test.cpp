// The shipped profiles: found by name, the default among them, a path taken as
// given, and an unknown name refused with the list of what is shipped.
#include <gtest/gtest.h>

#include <algorithm>

#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

TEST(ShippedProfiles, TheDefaultIsShippedAndLoads) {
  const auto names = shipped_profile_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), kDefaultProfile), names.end());
  const auto path = resolve_profile(kDefaultProfile);
  EXPECT_EQ(path, shipped_profile_dir() / (std::string(kDefaultProfile) + ".json"));
  EXPECT_FALSE(load_profile(path).layers.empty());
}

TEST(ShippedProfiles, APathIsTakenAsGiven) {
  const std::string path = std::string(GPIPE_TEST_DATA_DIR) + "/profiles/valid_two_layers.json";
  EXPECT_EQ(resolve_profile(path), std::filesystem::path(path));
}

TEST(ShippedProfiles, AnUnknownNameListsTheShippedOnes) {
  const std::string error = gpipe::testing::error_of([] { (void)resolve_profile("no-such-profile"); });
  EXPECT_EQ(error.rfind("--profile no-such-profile: no such file, and no shipped profile of that name "
                        "(shipped: ",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find(std::string(kDefaultProfile)), std::string::npos) << error;
}

}  // namespace
}  // namespace gpipe::profiles
