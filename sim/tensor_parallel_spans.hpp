// The tensor-parallel collectives inside a predicted timeline's compute
// actions, as a trace shows them on each rank's tensor-parallel
// lane and `diff` compares them with a run's (timelines::CollectiveSpan).
//
// A profile of one GPU of a group of T prices each pass with its collectives
// already in it (profiles/analytic.hpp adds them; a measured profile timed
// them); these spans say where inside the pass they are. Each layer's
// collectives of a pass (models::Layer::collectives: F and R the forward's; B
// the input and weight parts; I the input part; W the weight and split-weight
// parts) are priced by profiles/collectives.hpp over the T GPUs and `link`,
// and laid end to end so that the last ends where the layer's share of the
// action ends (never before the previous layer's spans end, nor past the
// action's end: where they cost more than that, they are cut there). A layer's share is its profiled time of that pass at the
// micro-batch's size over the stage's, scaled to the action's interval
// (which holds any contention); layers run in order in F and R, in reverse in
// B, I and W. (A block does its two all-reduces after its attention and after
// its feed-forward; a span at the layer's end keeps their sum, not the gap.)
#pragma once

#include <span>

#include "models/model.hpp"
#include "profiles/collectives.hpp"
#include "profiles/profile.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

// Adds the spans of every compute action of `timeline` (F, B, I, W, R on the
// compute or overlap stream) to timeline.collectives, sorted by rank then
// start, and sets info.tensor_parallel. `model` is the profile's, split over
// its T GPUs (models::split_tensor_parallel), one layer per profile layer;
// microbatch_sizes[m] is micro-batch m's size. Nothing for T = 1.
void add_tensor_parallel_spans(timelines::Timeline& timeline, const profiles::Profile& profile,
                               const models::Model& model, std::span<const int> layers_per_stage,
                               std::span<const int> microbatch_sizes, const profiles::CollectiveLink& link);

}  // namespace gpipe::sim
