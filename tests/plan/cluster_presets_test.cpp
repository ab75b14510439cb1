// The cluster presets: the shipped table (each row's device is a known
// device, each names its source, Selene's network is 25 GB/s a GPU), lookup
// by key, and the reader's one-line errors.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "plan/cluster_presets.hpp"
#include "profiles/device.hpp"
#include "tests/error_of.hpp"

namespace gpipe::plan {
namespace {

TEST(ClusterPresets, ShippedRowsNameAKnownDeviceAndASource) {
  ASSERT_GE(known_clusters().size(), 3U);
  for (const ClusterPreset& c : known_clusters()) {
    EXPECT_EQ(profiles::device_named(c.device).key, c.device) << c.key;
    EXPECT_FALSE(c.source.empty()) << c.key;
  }
  const ClusterPreset selene = cluster_named("DGX-A100");  // keys are case-insensitive
  EXPECT_EQ(selene.device, "a100");
  EXPECT_EQ(selene.gpus_per_node, 8);
  EXPECT_EQ(selene.inter_node, (profiles::CollectiveLink{.latency_us = 5, .bandwidth_GBps = 25}));
  EXPECT_EQ(cluster_named("meta-h100-roce").inter_node.bandwidth_GBps, 50);
  EXPECT_EQ(cluster_keys(), "dgx-a100, dgx-h100, meta-h100-roce");
}

std::string error_of(const std::string& json) {
  return testing::error_of([&] { (void)parse_clusters(json, "c.json"); });
}

TEST(ClusterPresets, ErrorsNameTheRowAndField) {
  const std::string row =
      R"({"key": "a", "name": "A", "device": "h100", "gpus_per_node": 8, "inter_node_GBps": 50, )"
      R"("inter_node_latency_us": 5, "source": "s"})";
  EXPECT_EQ(parse_clusters(R"({"clusters": [)" + row + "]}", "c.json").size(), 1U);
  EXPECT_EQ(error_of(R"({"clusters": []})"), "c.json: clusters: expected a non-empty array");
  EXPECT_EQ(error_of(R"({"clusters": [)" + row + "," + row + "]}"), "c.json: clusters[1].key: 'a' is another cluster's");
  std::string zero = row;
  zero.replace(zero.find("\"inter_node_GBps\": 50"), 21, "\"inter_node_GBps\": 0");
  EXPECT_EQ(error_of(R"({"clusters": [)" + zero + "]}"), "c.json: clusters[0].inter_node_GBps: expected a positive number");
  EXPECT_THROW((void)cluster_named("nope"), InputError);
}

}  // namespace
}  // namespace gpipe::plan
