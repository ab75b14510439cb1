#include "tools/common/metrics_table.hpp"

#include <fmt/format.h>

#include "tools/common/units.hpp"

namespace gpipe::tools {

std::string format_metrics_summary(const timelines::Metrics& m, std::string_view schedule_name) {
  const schedules::AnalyticForms forms = schedules::analytic_bubble_forms(schedule_name);
  std::string out;
  out += fmt::format("step time       {}\n", format_time_us(m.step_time_us));
  out += fmt::format("throughput      {:.1f} samples/s\n", m.throughput_samples_per_s);
  if (m.bubble_fraction_analytic && m.bubble_time_over_ideal_analytic) {
    out += fmt::format("bubble          {:.2f} % of the step (analytic {}: {:.2f} %)\n",
                       100 * m.bubble_fraction, forms.fraction, 100 * *m.bubble_fraction_analytic);
    out += fmt::format("bubble / ideal  {:.2f} % (Megatron's convention; analytic {}: {:.2f} %)\n\n",
                       100 * m.bubble_time_over_ideal, forms.time_over_ideal,
                       100 * *m.bubble_time_over_ideal_analytic);
  } else {
    out += fmt::format("bubble          {:.2f} % of the step (no closed form for this schedule)\n",
                       100 * m.bubble_fraction);
    out += fmt::format("bubble / ideal  {:.2f} % (Megatron's convention)\n\n", 100 * m.bubble_time_over_ideal);
  }
  return out;
}

namespace {

// "3" or "0-5": the layers of one stage.
std::string stage_layers(const models::Partition& partition, int stage) {
  const int first = partition.first_layer(stage);
  const int last = partition.end_layer(stage) - 1;
  return first == last ? std::to_string(first) : fmt::format("{}-{}", first, last);
}

std::string rank_layers(const models::Partition& partition, std::span<const schedules::Rank> stage_to_rank,
                        int rank) {
  if (stage_to_rank.empty()) return stage_layers(partition, rank);
  std::string out;
  for (std::size_t s = 0; s < stage_to_rank.size(); ++s) {
    if (stage_to_rank[s].value != rank) continue;
    out += (out.empty() ? "" : ",") + stage_layers(partition, static_cast<int>(s));
  }
  return out;
}

}  // namespace

std::string format_rank_table(const timelines::Metrics& m, const models::Partition& partition,
                              std::string_view static_label, std::span<const schedules::Rank> stage_to_rank) {
  std::string out = fmt::format("{:>4}  {:>7}  {:>10}  {:>6}  {:>15}  {:>18}  {:>10}\n", "rank",
                                "layers", "busy", "util", "peak activation", static_label, "total");
  for (const auto& r : m.ranks) {
    out += fmt::format("{:>4}  {:>7}  {:>10}  {:>5.1f}%  {:>15}  {:>18}  {:>10}\n", r.rank,
                       rank_layers(partition, stage_to_rank, r.rank),
                       format_time_us(r.busy_us), 100 * r.utilization,
                       format_bytes(r.peak_activation_bytes), format_bytes(r.static_bytes),
                       format_bytes(r.peak_activation_bytes + r.static_bytes));
  }
  return out;
}

}  // namespace gpipe::tools
