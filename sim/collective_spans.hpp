// The collectives inside a predicted timeline's compute actions, those of the
// tensor-parallel group and those of the context-parallel group, as a trace
// shows them on each rank's lane of the group and `diff` compares them with a
// run's (timelines::CollectiveSpan).
//
// A profile of one GPU of a group of T (and of C sharing each sequence)
// prices each pass with its collectives already in it (profiles/analytic.hpp
// adds them; a measured profile timed them); these spans say where inside the
// pass they are. Each layer's collectives of a pass (models::Layer::collectives:
// F and R the forward's; B the input and weight parts; I the input part; W the
// weight and split-weight parts) are priced by profiles/collectives.hpp over
// their group's GPUs (T or C) and its link (SpanLinks),
// and laid end to end so that the last ends where the layer's share of the
// action ends (never before the previous layer's spans end, nor past the
// action's end: where they cost more than that, they are cut there). A layer's share is its profiled time of that pass at the
// micro-batch's size over the stage's, scaled to the action's interval
// (which holds any contention); layers run in order in F and R, in reverse in
// B, I and W. (A block does its two all-reduces after its attention and after
// its feed-forward; a span at the layer's end keeps their sum, not the gap.
// Its context group's all-gather comes before its attention, but sits there
// too: the spans say how long each collective took and in which action, which
// is what `diff` compares.) A profile does not say which form of context
// parallelism it priced, so the spans are the all-gather form's, the one the
// executor runs (the ring's passes move the same bytes).
#pragma once

#include <optional>
#include <span>

#include "models/model.hpp"
#include "profiles/collectives.hpp"
#include "profiles/profile.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

// What the spans are priced on: the tensor-parallel group's link, and the
// context-parallel group's, with its all-gather's and reduce-scatter's own
// fits where the profile has them (profiles::Link).
struct SpanLinks {
  profiles::CollectiveLink tensor;
  profiles::CollectiveLink context;
  std::optional<profiles::CollectiveLink> context_all_gather;
  std::optional<profiles::CollectiveLink> context_reduce_scatter;
};

// Adds the spans of every compute action of `timeline` (F, B, I, W, R on the
// compute or overlap stream) to timeline.collectives, sorted by rank then
// start, and sets info.tensor_parallel and info.context_parallel. `model` is
// the profile's, split over its T GPUs (models::split_tensor_parallel) and
// then its C (models::split_context_parallel), one layer per profile layer;
// microbatch_sizes[m] is micro-batch m's size. Nothing for T = C = 1.
void add_collective_spans(timelines::Timeline& timeline, const profiles::Profile& profile, const models::Model& model,
                          std::span<const int> layers_per_stage, std::span<const int> microbatch_sizes,
                          const SpanLinks& links);

}  // namespace gpipe::sim
