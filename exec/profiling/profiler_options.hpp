// What `gpipe-run profile` asks of a backend's layer profiler, the same for
// every backend (exec/cpu/profiler.hpp, exec/cuda/profiler/): how many passes
// warm up and how many are timed, the seed of the weights and inputs, the
// optimizer whose step is timed, and where progress and notes go.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "exec/runtime/optimizer_config.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec {

namespace cpu {
class TensorParallelComm;   // exec/cpu/tensor_parallel_comm.hpp
class ContextParallelComm;  // exec/cpu/context_parallel_comm.hpp
}  // namespace cpu

struct ProfilerOptions {
  int warmup = 2;   // untimed passes over every size
  int repeats = 5;  // timed passes; the medians are kept
  std::uint64_t seed = 1;  // weights (as the executor makes them) and the random inputs
  OptimizerConfig optimizer;  // whose step optimizer_us times (AdamW by default)
  int link_round_trips = 200;  // messages timed for the CPU's in-process link latency
  // cpu: the threads the layers are measured with, as many as each rank of the
  // run to predict computes with (TrainOptions::threads_per_rank).
  int threads_per_rank = 1;
  // cpu: how many other ranks to measure the contention with (the slowdown of
  // a pass while 1, 2, ... others run beside it: profiles::ContentionPoint),
  // at most the cores less one; -1: as many as that; 0: none. Only with one
  // thread per rank.
  int contention_peers = -1;
  // cpu: inference's profile (profiles::Profile::workload "inference"): passes
  // of the forwards alone, no backward or optimizer step, so that each forward
  // finds the caches as a stream of forwards leaves them; backward times 0.
  bool forward_only = false;
  // cpu: the layers as one part of a tensor-parallel group (every process of
  // the group profiles at once, each part's blocks summing over it): the
  // profile is one part's, Profile::tensor_parallel the group's size. Null:
  // the layers whole. No contention is measured with one.
  cpu::TensorParallelComm* tensor_parallel = nullptr;
  // cpu: the layers as one member of a context-parallel group (a model split
  // by models::split_context_parallel; every member profiles at once, its
  // blocks gathering the group's keys and values): the profile is one
  // member's, on its tokens of the run's sequences, Profile::context_parallel
  // the group's size. No contention is measured with one. With both groups,
  // the layers are one part of one member (models::split_tensor_then_context).
  cpu::ContextParallelComm* context_parallel = nullptr;
  // Progress: after each pass over every size (warm-up passes included), then
  // once per layer with its finished profile.
  std::function<void(int pass, int passes)> on_pass;
  std::function<void(int layer, int layers, const profiles::LayerProfile&)> on_layer;
  // A line worth saying before the timing starts (where on the device the
  // layers run), for stderr.
  std::function<void(const std::string& note)> on_note;
};

}  // namespace gpipe::exec
