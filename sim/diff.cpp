#include "sim/diff.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "timelines/metrics.hpp"
#include "timelines/report_check.hpp"
#include "timelines/transfers.hpp"

namespace gpipe::sim {
namespace {

using namespace gpipe::schedules;
using namespace gpipe::timelines;
using nlohmann::json;

// Actions are matched by (rank, action); the map's order makes every list sorted.
using ActionIndex = std::map<std::pair<Rank, Action>, const TimedAction*>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxListed = 10;  // unmatched actions named in the text report

// (pred - meas) / meas * 100; 0 when both are 0, NaN when only meas is.
double percent_error(double predicted, double measured) {
  if (measured == 0.0) return predicted == 0.0 ? 0.0 : kNaN;
  return (predicted - measured) / measured * 100.0;
}

std::string label(Rank rank, const Action& action) {
  return fmt::format("{} (rank {})", to_string(action), rank.value);
}

// A data-parallel reduction is its REDUCE_GRAD twice on its rank: the start
// on the compute stream, the reduction itself on the reduce stream; `reduce`
// picks which of the two streams' actions to index.
ActionIndex index_actions(const Timeline& timeline, std::string_view which, bool reduce = false) {
  ActionIndex index;
  for (const auto& a : timeline.actions) {
    if ((a.stream == Stream::reduce) != reduce) continue;
    if (!index.emplace(std::pair{a.rank, a.action}, &a).second) {
      throw InputError(fmt::format("{} trace: action {} appears twice on rank {}", which,
                                   to_string(a.action), a.rank.value));
    }
  }
  return index;
}

// Names every schedule field the two traces disagree on; a prediction of one
// schedule says nothing about a measurement of another.
void check_same_schedule(const TimelineInfo& p, const TimelineInfo& m) {
  std::vector<std::string> differences;
  const auto differ = [&](std::string_view field, const auto& a, const auto& b) {
    if (a != b) differences.push_back(fmt::format("{} {} vs {}", field, a, b));
  };
  if (p.schedule_name != m.schedule_name) {
    differences.push_back(fmt::format("name \"{}\" vs \"{}\"", p.schedule_name, m.schedule_name));
  }
  differ("num_ranks", p.num_ranks, m.num_ranks);
  differ("num_stages", p.num_stages, m.num_stages);
  differ("num_microbatches", p.num_microbatches, m.num_microbatches);
  differ("recompute", to_string(p.recompute), to_string(m.recompute));
  if (p.stage_to_rank != m.stage_to_rank) {
    const auto ranks = [](const std::vector<Rank>& map) {
      std::vector<int> out;
      for (const Rank r : map) out.push_back(r.value);
      return out;
    };
    differences.push_back(fmt::format("stage_to_rank [{}] vs [{}]",
                                      fmt::join(ranks(p.stage_to_rank), ", "),
                                      fmt::join(ranks(m.stage_to_rank), ", ")));
  }
  if (!differences.empty()) {
    throw InputError(fmt::format(
        "predicted and measured traces describe different schedules (predicted vs measured): {}",
        fmt::join(differences, ", ")));
  }
}

Metrics metrics_of(const Timeline& timeline, std::string_view which) {
  try {
    Metrics m = compute_metrics(timeline);
    // The trace is input: metrics that break a report's promises (a rank busy
    // longer than the step, from overlapping compute slices) are its fault.
    if (const std::string why = report_violation(m); !why.empty()) throw InputError(why);
    return m;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} trace: {}", which, e.what()));
  }
}

std::int64_t earliest_start(const Timeline& timeline) {
  if (timeline.actions.empty()) return 0;
  return std::ranges::min(timeline.actions, {}, &TimedAction::start_ns).start_ns;
}

// Sums over the matched actions of one kind, in exact ns.
struct KindSums {
  int count = 0;
  std::int64_t predicted_ns = 0, measured_ns = 0, abs_error_ns = 0;
};

json number_or_null(double value) { return std::isnan(value) ? json(nullptr) : json(value); }

std::string percent_text(double value, int decimals) {
  return std::isnan(value) ? "n/a" : fmt::format("{:+.{}f} %", value, decimals);
}

json info_json(const TimelineInfo& info) {
  return {{"source", info.source},
          {"device", info.device},
          {"schedule", info.schedule_name},
          {"num_ranks", info.num_ranks},
          {"num_stages", info.num_stages},
          {"num_microbatches", info.num_microbatches},
          {"recompute", to_string(info.recompute)}};
}

// "sim (gpipe K=4 M=8)", "cuda (NVIDIA H100 80GB HBM3, gpipe K=4 M=8)".
std::string info_text(const TimelineInfo& info) {
  const std::string device = info.device.empty() ? "" : info.device + ", ";
  return fmt::format("{} ({}{} K={} M={})", info.source, device, info.schedule_name,
                     info.num_stages, info.num_microbatches);
}

void list_unmatched(std::string_view title, const std::vector<std::string>& names,
                    std::string& out) {
  if (names.empty()) return;
  const std::size_t shown = std::min(names.size(), kMaxListed);
  fmt::format_to(std::back_inserter(out), "{}: {}", title,
                 fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (names.size() > shown) fmt::format_to(std::back_inserter(out), " (and {} more)", names.size() - shown);
  out += '\n';
}

// The statistics of (predicted, measured) durations in ns, one pair each.
TransferError duration_errors(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
  TransferError t;
  std::int64_t predicted_ns = 0, measured_ns = 0;
  std::vector<double> abs_errors;
  for (const auto& [predicted, measured] : pairs) {
    ++t.count;
    predicted_ns += predicted;
    measured_ns += measured;
    const double e = percent_error(static_cast<double>(predicted), static_cast<double>(measured));
    if (!std::isnan(e)) abs_errors.push_back(std::abs(e));
  }
  if (t.count == 0) return t;
  t.predicted_mean_us = timelines::to_us(predicted_ns) / t.count;
  t.measured_mean_us = timelines::to_us(measured_ns) / t.count;
  t.mean_error_pct = percent_error(static_cast<double>(predicted_ns), static_cast<double>(measured_ns));
  if (!abs_errors.empty()) {
    std::ranges::sort(abs_errors);
    t.median_abs_error_pct = abs_errors[abs_errors.size() / 2];
    t.max_abs_error_pct = abs_errors.back();
    t.abs_errors_pct = std::move(abs_errors);
  } else {
    t.median_abs_error_pct = t.max_abs_error_pct = kNaN;
  }
  return t;
}

// Each message's predicted transfer against the time its bytes took.
TransferError transfer_errors(const ActionIndex& pred, const Timeline& measured) {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (const MeasuredTransfer& m : measured_transfers(measured)) {
    const auto it = pred.find({m.receive->rank, m.receive->action});
    if (it != pred.end()) pairs.emplace_back(it->second->duration_ns(), m.took_ns);
  }
  return duration_errors(pairs);
}

// Each data-parallel reduction matched in both, by its duration.
TransferError reduction_errors(const ActionIndex& pred, const ActionIndex& meas) {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (const auto& [key, p] : pred) {
    const auto it = meas.find(key);
    if (it != meas.end()) pairs.emplace_back(p->duration_ns(), it->second->duration_ns());
  }
  return duration_errors(pairs);
}

// The time each (rank, compute action) spent in collectives of `group`.
std::map<std::pair<Rank, Action>, std::int64_t> collective_time(const Timeline& timeline, CollectiveGroup group) {
  std::map<std::pair<Rank, Action>, std::int64_t> sums;
  for (const CollectiveSpan& c : timeline.collectives) {
    if (c.group == group) sums[{c.rank, c.within}] += c.duration_ns();
  }
  return sums;
}

// Each action's collectives of `group`, in both, by their summed durations.
TransferError collective_errors(const Timeline& predicted, const Timeline& measured, CollectiveGroup group) {
  const auto meas = collective_time(measured, group);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (const auto& [key, p] : collective_time(predicted, group)) {
    const auto it = meas.find(key);
    if (it != meas.end()) pairs.emplace_back(p, it->second);
  }
  return duration_errors(pairs);
}

json error_json(const TransferError& t) {
  return {{"count", t.count},
          {"predicted_mean_us", t.predicted_mean_us},
          {"measured_mean_us", t.measured_mean_us},
          {"mean_error_pct", number_or_null(t.mean_error_pct)},
          {"median_abs_error_pct", number_or_null(t.median_abs_error_pct)},
          {"max_abs_error_pct", number_or_null(t.max_abs_error_pct)}};
}

}  // namespace

TimelineDiff diff_timelines(const Timeline& predicted, const Timeline& measured, int worst) {
  if (worst < 0) throw InputError(fmt::format("worst must be 0 or more, not {}", worst));
  check_same_schedule(predicted.info, measured.info);
  const ActionIndex pred = index_actions(predicted, "predicted");
  const ActionIndex meas = index_actions(measured, "measured");

  TimelineDiff d;
  d.predicted_info = predicted.info;
  d.measured_info = measured.info;
  const std::int64_t pred_origin = earliest_start(predicted);
  const std::int64_t meas_origin = earliest_start(measured);
  std::array<KindSums, kNumActionKinds> sums{};
  std::int64_t drift_sum_ns = 0, drift_max_ns = 0;
  std::vector<ActionError> errors;
  for (const auto& [key, p] : pred) {
    const auto it = meas.find(key);
    if (it == meas.end()) {
      d.only_in_predicted.push_back(label(key.first, key.second));
      continue;
    }
    const TimedAction& m = *it->second;
    const std::int64_t error_ns = p->duration_ns() - m.duration_ns();
    const std::int64_t drift_ns = (p->start_ns - pred_origin) - (m.start_ns - meas_origin);
    errors.push_back({key.first, key.second, timelines::to_us(p->duration_ns()), timelines::to_us(m.duration_ns()),
                      timelines::to_us(error_ns), timelines::to_us(drift_ns)});
    drift_sum_ns += std::abs(drift_ns);
    drift_max_ns = std::max(drift_max_ns, std::abs(drift_ns));
    KindSums& s = sums[static_cast<std::size_t>(key.second.kind)];
    ++s.count;
    s.predicted_ns += p->duration_ns();
    s.measured_ns += m.duration_ns();
    s.abs_error_ns += std::abs(error_ns);
  }
  for (const auto& [key, m] : meas) {
    if (!pred.contains(key)) d.only_in_measured.push_back(label(key.first, key.second));
  }
  d.matched = static_cast<int>(errors.size());
  if (d.matched == 0) {
    throw InputError(fmt::format(
        "predicted and measured traces have no action in common (predicted has {}, measured has {})",
        pred.size(), meas.size()));
  }

  const Metrics pm = metrics_of(predicted, "predicted");
  const Metrics mm = metrics_of(measured, "measured");
  d.predicted_step_us = pm.step_time_us;
  d.measured_step_us = mm.step_time_us;
  d.step_time_error_pct = percent_error(pm.step_time_us, mm.step_time_us);
  d.predicted_bubble = pm.bubble_fraction;
  d.measured_bubble = mm.bubble_fraction;
  d.bubble_error_points = (pm.bubble_fraction - mm.bubble_fraction) * 100.0;

  for (int k = 0; k < kNumActionKinds; ++k) {
    const auto kind = static_cast<ActionKind>(k);
    const KindSums& s = sums[static_cast<std::size_t>(k)];
    if (is_comm(kind) || s.count == 0) continue;
    const double n = s.count;
    d.kinds.push_back({kind, s.count, timelines::to_us(s.predicted_ns) / n, timelines::to_us(s.measured_ns) / n,
                       timelines::to_us(s.abs_error_ns) / n,
                       percent_error(static_cast<double>(s.predicted_ns),
                                     static_cast<double>(s.measured_ns))});
  }
  d.mean_abs_start_drift_us = timelines::to_us(drift_sum_ns) / d.matched;
  d.max_abs_start_drift_us = timelines::to_us(drift_max_ns);
  // Same schedule, so both have num_ranks ranks.
  for (std::size_t r = 0; r < pm.ranks.size(); ++r) {
    d.peak_activation_error_pct.push_back(
        percent_error(static_cast<double>(pm.ranks[r].peak_activation_bytes),
                      static_cast<double>(mm.ranks[r].peak_activation_bytes)));
  }
  d.transfers = transfer_errors(pred, measured);
  d.reductions = reduction_errors(index_actions(predicted, "predicted", /*reduce=*/true),
                                  index_actions(measured, "measured", /*reduce=*/true));
  d.tensor_parallel = collective_errors(predicted, measured, CollectiveGroup::tensor);
  d.context_parallel = collective_errors(predicted, measured, CollectiveGroup::context);
  d.predicted_waits = attribute_waits(predicted);
  d.measured_waits = attribute_waits(measured);
  // Stable: equal errors stay in (rank, action) order.
  std::ranges::stable_sort(errors, std::greater{},
                           [](const ActionError& e) { return std::abs(e.error_us); });
  errors.resize(std::min(errors.size(), static_cast<std::size_t>(worst)));
  d.worst = std::move(errors);
  return d;
}

json to_json(const TimelineDiff& d) {
  json kinds = json::array();
  for (const auto& k : d.kinds) {
    kinds.push_back({{"kind", to_string(k.kind)},
                     {"count", k.count},
                     {"predicted_mean_us", k.predicted_mean_us},
                     {"measured_mean_us", k.measured_mean_us},
                     {"mean_abs_error_us", k.mean_abs_error_us},
                     {"mean_error_pct", number_or_null(k.mean_error_pct)}});
  }
  json worst = json::array();
  for (const auto& w : d.worst) {
    worst.push_back({{"rank", w.rank.value},
                     {"action", to_string(w.action)},
                     {"predicted_us", w.predicted_us},
                     {"measured_us", w.measured_us},
                     {"error_us", w.error_us},
                     {"start_drift_us", w.start_drift_us}});
  }
  json peaks = json::array();
  for (const double p : d.peak_activation_error_pct) peaks.push_back(number_or_null(p));
  const auto waits_json = [](const std::vector<RankWaits>& waits) {
    json out = json::array();
    for (const RankWaits& w : waits) {
      out.push_back({{"rank", w.rank},
                     {"idle_us", timelines::to_us(w.idle_ns)},
                     {"peer_us", timelines::to_us(w.peer_ns)},
                     {"transfer_us", timelines::to_us(w.transfer_ns)},
                     {"other_us", timelines::to_us(w.other_ns)},
                     {"after_last_us", timelines::to_us(w.after_last_ns)},
                     {"longest", w.longest}});
    }
    return out;
  };
  return {{"predicted", info_json(d.predicted_info)},
          {"measured", info_json(d.measured_info)},
          {"matched", d.matched},
          {"only_in_predicted", d.only_in_predicted},
          {"only_in_measured", d.only_in_measured},
          {"predicted_step_us", d.predicted_step_us},
          {"measured_step_us", d.measured_step_us},
          {"step_time_error_pct", number_or_null(d.step_time_error_pct)},
          {"predicted_bubble", d.predicted_bubble},
          {"measured_bubble", d.measured_bubble},
          {"bubble_error_points", d.bubble_error_points},
          {"kinds", std::move(kinds)},
          {"mean_abs_start_drift_us", d.mean_abs_start_drift_us},
          {"max_abs_start_drift_us", d.max_abs_start_drift_us},
          {"peak_activation_error_pct", std::move(peaks)},
          {"transfers", error_json(d.transfers)},
          {"reductions", error_json(d.reductions)},
          {"tensor_parallel_collectives", error_json(d.tensor_parallel)},
          {"context_parallel_collectives", error_json(d.context_parallel)},
          {"waits", {{"predicted", waits_json(d.predicted_waits)}, {"measured", waits_json(d.measured_waits)}}},
          {"worst", std::move(worst)}};
}

std::string to_text(const TimelineDiff& d) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "predicted: {}   measured: {}\n", info_text(d.predicted_info),
                 info_text(d.measured_info));
  fmt::format_to(it, "actions     matched {}, only in predicted {}, only in measured {}\n",
                 d.matched, d.only_in_predicted.size(), d.only_in_measured.size());
  fmt::format_to(it, "step time   predicted {:>10.1f} us   measured {:>10.1f} us   error {}\n",
                 d.predicted_step_us, d.measured_step_us, percent_text(d.step_time_error_pct, 2));
  fmt::format_to(it, "bubble      predicted {:>10.1f} %    measured {:>10.1f} %    error {:+.1f} points\n",
                 d.predicted_bubble * 100.0, d.measured_bubble * 100.0, d.bubble_error_points);
  // The kind column as wide as its longest name (WAIT_REDUCE_GRAD in torch's runs).
  std::size_t width = 10;
  for (const auto& k : d.kinds) width = std::max(width, to_string(k.kind).size() + 1);
  fmt::format_to(it, "per kind  {:<{}}count  predicted mean  measured mean  mean |err|  mean err\n", "", width - 8);
  for (const auto& k : d.kinds) {
    fmt::format_to(it, "  {:<{}}{:>5}{:>13.1f} us{:>12.1f} us{:>9.1f} us{:>10}\n", to_string(k.kind), width,
                   k.count, k.predicted_mean_us, k.measured_mean_us, k.mean_abs_error_us,
                   percent_text(k.mean_error_pct, 1));
  }
  // "transfers   4 messages: ...", "reductions  2 data-parallel: ...".
  const auto durations = [&it](std::string_view title, std::string_view what, std::string_view each,
                               const TransferError& t) {
    if (t.count == 0) return;
    fmt::format_to(it, "{:<12}{} {}: predicted mean {:.1f} us, measured {:.1f} us, error {}; per {} |error| median {}, "
                   "largest {}\n",
                   title, t.count, what, t.predicted_mean_us, t.measured_mean_us, percent_text(t.mean_error_pct, 1),
                   each, percent_text(t.median_abs_error_pct, 1), percent_text(t.max_abs_error_pct, 1));
  };
  durations("transfers", "messages", "message", d.transfers);
  durations("reductions", "data-parallel", "reduction", d.reductions);
  durations("tp comm", "actions' tensor-parallel collectives", "action", d.tensor_parallel);
  durations("cp comm", "actions' context-parallel collectives", "action", d.context_parallel);
  fmt::format_to(it, "start drift mean {:.1f} us, max {:.1f} us\n", d.mean_abs_start_drift_us,
                 d.max_abs_start_drift_us);
  out += "peak activation memory error per rank:";
  for (const double p : d.peak_activation_error_pct) out += " " + percent_text(p, 1);
  out += '\n';
  // Where each rank idled, and what held it: predicted | measured.
  if (d.predicted_waits.size() == d.measured_waits.size() && !d.measured_waits.empty()) {
    out += "waits       each rank's idle time (predicted | measured): for the peer stage's compute, in transfers, "
           "after its last action, other\n";
    const auto pair = [](std::int64_t p, std::int64_t m) { return fmt::format("{:.1f} | {:.1f}", timelines::to_us(p), timelines::to_us(m)); };
    for (std::size_t r = 0; r < d.measured_waits.size(); ++r) {
      const RankWaits& p = d.predicted_waits[r];
      const RankWaits& m = d.measured_waits[r];
      fmt::format_to(it, "  rank {:<4} idle {} us: peer {}, transfers {}, after last {}, other {}\n", m.rank,
                     pair(p.idle_ns, m.idle_ns), pair(p.peer_ns, m.peer_ns), pair(p.transfer_ns, m.transfer_ns),
                     pair(p.after_last_ns, m.after_last_ns), pair(p.other_ns, m.other_ns));
      if (!m.longest.empty()) fmt::format_to(it, "            longest measured wait: {}\n", m.longest);
    }
  }
  list_unmatched("only in predicted", d.only_in_predicted, out);
  list_unmatched("only in measured", d.only_in_measured, out);
  if (!d.worst.empty()) out += "worst actions (largest |duration error| first):\n";
  for (const auto& w : d.worst) {
    fmt::format_to(it, "  {:<16} predicted {:.1f} us  measured {:.1f} us  error {:+.1f} us  "
                   "start drift {:+.1f} us\n",
                   label(w.rank, w.action), w.predicted_us, w.measured_us, w.error_us,
                   w.start_drift_us);
  }
  return out;
}

}  // namespace gpipe::sim
