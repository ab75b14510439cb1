// How long a message takes on a link, and how concurrent messages on one
// directed rank-to-rank link share it (LinkSharing). The link model only
// prices one message alone; the engine applies the sharing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "schedules/ids.hpp"

namespace gpipe::sim {

// fifo (docs/design.md's deterministic default): a message starts when the one
// before it on the link has arrived. shared: messages in flight run at once
// and split the bandwidth equally (sim/shared_link.hpp); latency_ns is
// transfer_ns(from, to, 0) and the rest is the solo drain time.
enum class LinkSharing { fifo, shared };

[[nodiscard]] std::string_view to_string(LinkSharing sharing);
[[nodiscard]] std::optional<LinkSharing> parse_link_sharing(std::string_view text);

// A price depends on the ends and the bytes alone: the engine asks once for
// a run of messages of one size on one link (stage_links.hpp).
class LinkModel {
 public:
  virtual ~LinkModel() = default;
  [[nodiscard]] virtual std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to,
                                                 std::int64_t bytes) const = 0;
};

// Every link alike: latency_us + bytes / (bandwidth_GBps * 1e3) microseconds,
// rounded to the nearest ns (GB = 1e9 bytes, so 1 GB/s moves 1e3 bytes per us).
class UniformLink final : public LinkModel {
 public:
  UniformLink(double latency_us, double bandwidth_GBps)
      : latency_us_(latency_us), bandwidth_GBps_(bandwidth_GBps) {}

  [[nodiscard]] std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to,
                                         std::int64_t bytes) const override;
  [[nodiscard]] double latency_us() const { return latency_us_; }
  [[nodiscard]] double bandwidth_GBps() const { return bandwidth_GBps_; }

 private:
  double latency_us_;
  double bandwidth_GBps_;
};

// Transfers that cost nothing: the closed forms of the paper assume them.
class FreeLink final : public LinkModel {
 public:
  [[nodiscard]] std::int64_t transfer_ns(schedules::Rank, schedules::Rank,
                                         std::int64_t) const override {
    return 0;
  }
};

}  // namespace gpipe::sim
