// The measured profiles shipped in profiles/data (NAME-cupti-kK.json, from
// scripts/gpu-check on a lent GPU): each loads, names the device and the tool
// that measured it, and holds every layer at every micro-batch size. Measured
// files are never edited by hand, so nothing here compares them with a formula.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "profiles/profile.hpp"

namespace gpipe::profiles {
namespace {

TEST(MeasuredProfiles, EachNamesItsDeviceAndToolAndHoldsEverySize) {
  const std::filesystem::path dir =
      std::filesystem::path(GPIPE_TEST_DATA_DIR) / ".." / ".." / "profiles" / "data";
  int measured = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find("-cupti-") == std::string::npos) continue;
    SCOPED_TRACE(name);
    ++measured;
    const Profile p = load_profile(entry.path());
    EXPECT_EQ(p.source, "cupti");
    EXPECT_NE(p.device.find("NVIDIA"), std::string::npos) << p.device;
    ASSERT_FALSE(p.layers.empty());
    const std::size_t sizes = p.layers.front().samples.size();
    EXPECT_GE(sizes, 2u);
    for (const LayerProfile& layer : p.layers) {
      ASSERT_EQ(layer.samples.size(), sizes) << layer.name;
      for (const ProfileSample& s : layer.samples) {
        EXPECT_GT(s.fwd_us, 0.0) << layer.name;
        EXPECT_GT(s.bwd_us, 0.0) << layer.name;
      }
    }
    EXPECT_GT(p.link.bandwidth_GBps, 0.0);
  }
  EXPECT_GE(measured, 3);  // the H200's transformer L8 at K = 1, 2 and 4
}

}  // namespace
}  // namespace gpipe::profiles
