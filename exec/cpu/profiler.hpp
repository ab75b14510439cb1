// The CPU profiler behind `gpipe-run profile --backend cpu`: the cost of every
// layer of a model at each requested micro-batch size, timed and measured on
// this machine, written as a profile (docs/profiles.md; source "cpu") that the
// simulator reads like any other.
//
// The layers are built as the executor builds them (cpu::make_layer) and the
// whole model runs as a one-stage pipeline runs a micro-batch: every forward in
// model order from a seeded random input (and target, for the loss layer),
// every backward in reverse, then each layer's optimizer step (AdamW by
// default). `warmup` untimed passes, then `repeats` timed ones, each pass going
// round all the sizes; each forward, each half of the backward (I, then W at
// once) and each step is timed on its own, and fwd_us, bwd_input_us,
// bwd_weight_us and optimizer_us are the medians; bwd_us is bwd_input_us +
// bwd_weight_us, as a CPU layer's full backward is its I then its W. A
// backward's time is its calls alone, which consume the forward's stash.
//
// Why inside whole-model passes and not one layer at a time: a layer run alone
// and repeated keeps its weights in cache, and ran 30-40 % faster than in
// training (mlp hidden 256 at b = 4 on this project's 2-core machine); inside
// the pass it finds the caches as training leaves them.
//
// Bytes are MEASURED, not taken from the model description: input_bytes and
// output_bytes are the tensors' sizes, activation_bytes what the layer's stash
// account holds after its forward and weight_grad_stash_bytes what it holds
// after I, so a layer that keeps more or less than models::bytes_at() and
// models::weight_grad_stash_bytes_at() say shows up in the profile.
//
// Then, with one thread per rank, how ranks slow each other (the profile's
// `contention`): at the largest size, whole passes timed alone and beside
// 1, 2, 4, ... other threads running the same passes on replicas, and beside
// the most (the cores less one, at most kMaxContentionPeers), alone and
// loaded in turn (exec/cpu/profiler.cpp).
//
// The link is the in-process hand-off between two rank threads: its latency
// the median one-way time of a message between two threads through the
// executor's InProcessLink (half a round trip), its bandwidth
// kInProcessBandwidthGBps, because an in-process message moves a pointer to
// the tensor, never its bytes.
#pragma once

#include <span>

#include "exec/profiling/profiler_options.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cpu {

// A stand-in for "no per-byte cost": at 10^6 GB/s a 1 GB activation costs
// 1 ms, against the copy-free hand-off of the in-process link that costs
// nothing per byte. Large and finite, because a profile's bandwidth must be.
inline constexpr double kInProcessBandwidthGBps = 1e6;


// The most other ranks the contention is measured with (ProfilerOptions::contention_peers).
inline constexpr int kMaxContentionPeers = 7;

// InputError when the sizes are empty, hold a size < 1 or a duplicate, when
// warmup < 0, repeats < 1 or link_round_trips < 1; a layer kind the CPU
// backend lacks throws from make_layer.
[[nodiscard]] profiles::Profile profile_cpu(const models::Model& model,
                                            std::span<const int> micro_batch_sizes,
                                            const ProfilerOptions& options = {});

// The median one-way time, in microseconds, of a message between two threads
// through the in-process link: half of each of `round_trips` round trips.
[[nodiscard]] double measure_handoff_latency_us(int round_trips);

}  // namespace gpipe::exec::cpu
