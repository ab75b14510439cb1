#include "sim/collective_spans.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace gpipe::sim {

namespace {

using models::TensorParallelPass;
using schedules::ActionKind;

// Whether a collective of `pass` runs in an action of `kind`.
bool runs_in(TensorParallelPass pass, ActionKind kind) {
  switch (kind) {
    case ActionKind::F:
    case ActionKind::R:
      return pass == TensorParallelPass::forward;
    case ActionKind::B:
      return pass == TensorParallelPass::input || pass == TensorParallelPass::weight;
    case ActionKind::I:
      return pass == TensorParallelPass::input;
    case ActionKind::W:
      return pass == TensorParallelPass::weight || pass == TensorParallelPass::split_weight;
    default:
      return false;
  }
}

// The layer's profiled time of an action of `kind` at size b (0 when the
// profile has no sample of that size: the layers then share evenly).
double pass_us(const profiles::LayerProfile& layer, ActionKind kind, int b) {
  const auto it = std::ranges::find(layer.samples, b, &profiles::ProfileSample::micro_batch_size);
  if (it == layer.samples.end()) return 0;
  switch (kind) {
    case ActionKind::F:
    case ActionKind::R:
      return it->fwd_us;
    case ActionKind::B:
      return it->bwd_us;
    case ActionKind::I:
      return it->bwd_input_us.value_or(it->bwd_us);
    case ActionKind::W:
      return it->bwd_weight_us.value_or(0);
    default:
      return 0;
  }
}

// The link a collective of the layer's runs on: its group's, and for the
// context group the collective's own fit where there is one.
const profiles::CollectiveLink& link_of(const models::LayerCollective& c, const SpanLinks& links) {
  if (c.group == models::CollectiveGroup::tensor) return links.tensor;
  if (c.collective == models::Collective::all_gather && links.context_all_gather) return *links.context_all_gather;
  if (c.collective == models::Collective::reduce_scatter && links.context_reduce_scatter) {
    return *links.context_reduce_scatter;
  }
  return links.context;
}

bool is_pass(ActionKind kind) {
  return kind == ActionKind::F || kind == ActionKind::R || kind == ActionKind::B || kind == ActionKind::I ||
         kind == ActionKind::W;
}

}  // namespace

void add_collective_spans(timelines::Timeline& timeline, const profiles::Profile& profile, const models::Model& model,
                          std::span<const int> layers_per_stage, std::span<const int> microbatch_sizes,
                          const SpanLinks& links) {
  timeline.info.tensor_parallel = profile.tensor_parallel;
  timeline.info.context_parallel = profile.context_parallel;
  if (profile.tensor_parallel == 1 && profile.context_parallel == 1) return;
  if (model.layers.size() != profile.layers.size()) {
    throw InputError("collective spans: the model's layers are not the profile's");
  }
  const std::int64_t element_bytes = models::bytes_per_element(profile.dtype);
  std::vector<int> first_layer{0};
  for (const int n : layers_per_stage) first_layer.push_back(first_layer.back() + n);
  for (const timelines::TimedAction& a : timeline.actions) {
    if (!is_pass(a.action.kind)) continue;
    const auto s = a.action.stage.at();
    const int b = microbatch_sizes[a.action.microbatch.at()];
    std::vector<int> order;
    for (int l = first_layer.at(s); l < first_layer.at(s + 1); ++l) order.push_back(l);
    const bool forward = a.action.kind == ActionKind::F || a.action.kind == ActionKind::R;
    if (!forward) std::ranges::reverse(order);
    double total_us = 0;
    for (const int l : order) total_us += pass_us(profile.layers[static_cast<std::size_t>(l)], a.action.kind, b);
    double done_us = 0;
    std::int64_t free_from = a.start_ns;  // where the action's previous span ended
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto l = static_cast<std::size_t>(order[i]);
      done_us += total_us > 0 ? pass_us(profile.layers[l], a.action.kind, b) : 0;
      const double share = total_us > 0 ? done_us / total_us : static_cast<double>(i + 1) / order.size();
      const std::int64_t layer_end =
          a.start_ns + std::llround(share * static_cast<double>(a.end_ns - a.start_ns));
      std::vector<timelines::CollectiveSpan> spans;
      std::int64_t took_ns = 0;
      for (const models::LayerCollective& c : model.layers[l].collectives) {
        if (!runs_in(c.pass, a.action.kind)) continue;
        const bool context = c.group == models::CollectiveGroup::context;
        const int group = context ? profile.context_parallel : profile.tensor_parallel;
        if (group == 1) continue;
        const std::int64_t bytes = c.elems * b * element_bytes;
        const std::int64_t ns = profiles::fastest_collective(c.collective, group, bytes, link_of(c, links)).ns;
        spans.push_back({.rank = a.rank,
                         .within = a.action,
                         .collective = std::string(models::to_string(c.collective)),
                         .bytes = bytes,
                         .end_ns = ns,  // a duration, placed below
                         .group = context ? timelines::CollectiveGroup::context : timelines::CollectiveGroup::tensor});
        took_ns += ns;
      }
      // Inside the action, after the spans before: where the collectives cost
      // more than the layer's share (a link overridden beside a profile that
      // timed its own), they are cut at the action's end rather than overlap.
      std::int64_t at = std::min(std::max(layer_end - took_ns, free_from), a.end_ns);
      for (timelines::CollectiveSpan& span : spans) {
        span.start_ns = at;
        at = std::min(at + span.end_ns, a.end_ns);
        span.end_ns = at;
        timeline.collectives.push_back(std::move(span));
      }
      free_from = at;
    }
  }
  std::ranges::stable_sort(timeline.collectives, [](const auto& x, const auto& y) {
    return x.rank.value != y.rank.value ? x.rank.value < y.rank.value : x.start_ns < y.start_ns;
  });
}

}  // namespace gpipe::sim
