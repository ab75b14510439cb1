#include "timelines/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_fields.hpp"

namespace gpipe::timelines {
namespace {

using nlohmann::json;

// A ratio of exact integers with one rounding, so that closed forms such as
// (K-1)/(M+K-1) come out bit for bit; 0 when the denominator is 0.
double ratio(std::int64_t numerator, std::int64_t denominator) {
  if (denominator == 0) return 0.0;
  return static_cast<double>(numerator) / static_cast<double>(denominator);
}

// The metrics' errors: "metrics: field 'ranks[1].busy_us' is missing".
constexpr JsonWording kMetricsWording{.form = JsonWording::Form::quoted, .field_word = "field "};

// A number, or null for an absent value.
std::optional<double> optional_number(const JsonField& at) {
  if (at.value().is_null()) return std::nullopt;
  if (!at.value().is_number()) at.fail("must be a number or null");
  return at.number();
}

json or_null(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

// A backward that ran beside its forward (Stream::overlap) makes its rank
// busy only where the compute stream was idle: busy is the time the stream
// was occupied. Neither stream overlaps itself, so each overlap action adds
// its length less what compute actions cover of it.
void add_overlap_busy(const Timeline& timeline, Metrics& m) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> compute(m.ranks.size());
  bool any = false;
  for (const auto& a : timeline.actions) {
    any = any || a.stream == Stream::overlap;
    if (a.stream == Stream::compute) compute[a.rank.at()].emplace_back(a.start_ns, a.end_ns);
  }
  if (!any) return;
  for (auto& list : compute) std::sort(list.begin(), list.end());
  for (const auto& a : timeline.actions) {
    if (a.stream != Stream::overlap) continue;
    std::int64_t covered = 0;
    const auto& list = compute[a.rank.at()];
    // The first compute action that ends after this one starts, and on.
    auto it = std::lower_bound(list.begin(), list.end(), a.start_ns,
                               [](const auto& interval, std::int64_t t) { return interval.first < t; });
    if (it != list.begin()) --it;
    for (; it != list.end() && it->first < a.end_ns; ++it) {
      covered += std::max<std::int64_t>(0, std::min(it->second, a.end_ns) - std::max(it->first, a.start_ns));
    }
    m.ranks[a.rank.at()].busy_ns += a.duration_ns() - covered;
  }
}

}  // namespace

schedules::MeanComputeTimes ComputeTimeTotals::means() const {
  const auto mean = [this](int slot) {
    return count_[slot] == 0 ? 0.0 : static_cast<double>(sum_[slot]) / static_cast<double>(count_[slot]);
  };
  // A micro-batch's backward on a stage is one B, or one I and its W (some
  // schedules mix them: DualPipeV's overlapped pairs run B, the rest I and W).
  schedules::MeanComputeTimes t;
  t.forward = mean(0);
  const std::int64_t backwards = count_[1] + count_[2];
  t.backward = backwards == 0 ? 0.0 : static_cast<double>(sum_[1] + sum_[2] + sum_[3]) / static_cast<double>(backwards);
  t.weight = mean(3);
  return t;
}

Metrics compute_metrics(const Timeline& timeline) {
  const TimelineInfo& info = timeline.info;
  const auto num_ranks = static_cast<std::size_t>(std::max(info.num_ranks, 0));
  if (!info.static_bytes.empty() && info.static_bytes.size() != num_ranks) {
    throw InputError(fmt::format("static_bytes has {} entries for {} ranks",
                                 info.static_bytes.size(), num_ranks));
  }

  Metrics m;
  m.step_time_ns = makespan_ns(timeline);
  m.step_time_us = to_us(m.step_time_ns);
  m.ranks.resize(num_ranks);
  ComputeTimeTotals times;
  for (std::size_t r = 0; r < num_ranks; ++r) {
    m.ranks[r].rank = static_cast<int>(r);
    if (!info.static_bytes.empty()) m.ranks[r].static_bytes = info.static_bytes[r];
  }
  for (const auto& a : timeline.actions) {
    if (a.rank.value < 0 || a.rank.at() >= num_ranks) {
      throw InputError(fmt::format("action {} is on rank {}, outside the timeline's {} ranks",
                                   to_string(a.action), a.rank.value, num_ranks));
    }
    // Transfers run beside compute, so only the compute stream makes a rank busy.
    if (a.stream == Stream::compute) {
      m.ranks[a.rank.at()].busy_ns += a.duration_ns();
      times.add(a.action.kind, a.duration_ns());
    }
  }
  add_overlap_busy(timeline, m);
  std::vector<bool> sampled(num_ranks, false);
  for (const auto& s : timeline.memory) {
    if (s.rank.value < 0 || s.rank.at() >= num_ranks) {
      throw InputError(
          fmt::format("memory sample at {} ns is on rank {}, outside the timeline's {} ranks",
                      s.time_ns, s.rank.value, num_ranks));
    }
    auto& peak = m.ranks[s.rank.at()].peak_activation_bytes;
    peak = sampled[s.rank.at()] ? std::max(peak, s.activation_bytes) : s.activation_bytes;
    sampled[s.rank.at()] = true;
  }

  std::vector<std::int64_t> busy(num_ranks);
  std::vector<std::int64_t> peaks(num_ranks);
  for (std::size_t r = 0; r < num_ranks; ++r) {
    busy[r] = m.ranks[r].busy_ns;
    peaks[r] = m.ranks[r].peak_activation_bytes;
  }
  return metrics_from_totals(info, m.step_time_ns, busy, peaks, times.means());
}

Metrics metrics_from_totals(const TimelineInfo& info, std::int64_t step_time_ns,
                            std::span<const std::int64_t> busy_ns,
                            std::span<const std::int64_t> peak_activation_bytes,
                            const schedules::MeanComputeTimes& times) {
  Metrics m;
  m.step_time_ns = step_time_ns;
  m.step_time_us = to_us(step_time_ns);
  m.ranks.resize(busy_ns.size());
  std::int64_t total_busy = 0;
  for (std::size_t r = 0; r < busy_ns.size(); ++r) {
    RankMetrics& rank = m.ranks[r];
    rank.rank = static_cast<int>(r);
    rank.busy_ns = busy_ns[r];
    rank.busy_us = to_us(rank.busy_ns);
    rank.utilization = ratio(rank.busy_ns, m.step_time_ns);
    rank.peak_activation_bytes = peak_activation_bytes[r];
    if (!info.static_bytes.empty()) rank.static_bytes = info.static_bytes.at(r);
    total_busy += rank.busy_ns;
  }
  const auto ranks = static_cast<std::int64_t>(busy_ns.size());
  const std::int64_t idle = ranks * m.step_time_ns - total_busy;
  m.bubble_fraction = ratio(idle, ranks * m.step_time_ns);
  m.bubble_time_over_ideal = ratio(idle, total_busy);
  const int stages_per_rank = info.num_ranks > 0 ? info.num_stages / info.num_ranks : 1;
  if (const auto analytic = analytic_bubble(info.schedule_name, info.num_ranks, stages_per_rank,
                                            info.num_microbatches, times)) {
    m.bubble_fraction_analytic = analytic->fraction;
    m.bubble_time_over_ideal_analytic = analytic->time_over_ideal;
  }
  // batch * 1e9 / ns rather than batch / seconds: one rounding, exact where it can be.
  m.throughput_samples_per_s = m.step_time_ns > 0 ? static_cast<double>(info.batch_size) * 1e9 /
                                                        static_cast<double>(m.step_time_ns)
                                                  : 0.0;
  return m;
}

json to_json(const Metrics& metrics) {
  json ranks = json::array();
  for (const auto& r : metrics.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"busy_us", r.busy_us},
                     {"utilization", r.utilization},
                     {"peak_activation_bytes", r.peak_activation_bytes},
                     {"static_bytes", r.static_bytes}});
  }
  return {{"step_time_us", metrics.step_time_us},
          {"bubble_fraction", metrics.bubble_fraction},
          {"bubble_fraction_analytic", or_null(metrics.bubble_fraction_analytic)},
          {"bubble_time_over_ideal", metrics.bubble_time_over_ideal},
          {"bubble_time_over_ideal_analytic", or_null(metrics.bubble_time_over_ideal_analytic)},
          {"throughput_samples_per_s", metrics.throughput_samples_per_s},
          {"ranks", std::move(ranks)}};
}

Metrics metrics_from_json(const json& j) {
  const JsonField root(j, "metrics", kMetricsWording);
  Metrics m;
  m.step_time_us = root.member("step_time_us").number();
  m.step_time_ns = std::llround(m.step_time_us * 1000.0);
  m.bubble_fraction = root.member("bubble_fraction").number();
  m.bubble_fraction_analytic = optional_number(root.member("bubble_fraction_analytic"));
  m.bubble_time_over_ideal = root.member("bubble_time_over_ideal").number();
  m.bubble_time_over_ideal_analytic = optional_number(root.member("bubble_time_over_ideal_analytic"));
  m.throughput_samples_per_s = root.member("throughput_samples_per_s").number();
  const JsonField ranks = root.member("ranks");
  const std::size_t count = ranks.array_size();
  for (std::size_t i = 0; i < count; ++i) {
    const JsonField at = ranks.element(i);
    RankMetrics r;
    const JsonField rank = at.member("rank");
    const std::int64_t index = rank.integer();
    if (index < 0 || index > std::numeric_limits<int>::max()) rank.fail("is out of range");
    r.rank = static_cast<int>(index);
    r.busy_us = at.member("busy_us").number();
    r.busy_ns = std::llround(r.busy_us * 1000.0);
    r.utilization = at.member("utilization").number();
    r.peak_activation_bytes = at.member("peak_activation_bytes").integer();
    r.static_bytes = at.member("static_bytes").integer();
    m.ranks.push_back(r);
  }
  return m;
}

}  // namespace gpipe::timelines
