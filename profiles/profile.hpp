// The profile format of docs/design.md "Profiles": per-layer costs measured (CUPTI,
// CPU) or computed (analytic) at one or more micro-batch sizes, plus the link
// between ranks. This file holds the types and their JSON form; reading
// validates everything, so the rest of the project can trust a Profile.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/context_parallel.hpp"
#include "profiles/collectives.hpp"

namespace gpipe::profiles {

// The costs of one layer at one micro-batch size. Times in microseconds,
// sizes in bytes.
struct ProfileSample {
  int micro_batch_size = 0;
  double fwd_us = 0;
  double bwd_us = 0;
  // The backward split into input and weight gradients (zero-bubble schedules).
  // Both present or both absent; every sample of one layer agrees.
  std::optional<double> bwd_input_us;
  std::optional<double> bwd_weight_us;
  std::int64_t input_bytes = 0;
  std::int64_t output_bytes = 0;
  // What the layer keeps for its backward when not recomputing, its input
  // included (so activation_bytes >= input_bytes).
  std::int64_t activation_bytes = 0;
  // Of those, what a split backward keeps from the end of I to the end of W
  // (<= activation_bytes). Absent: W keeps everything, an upper bound.
  std::optional<std::int64_t> weight_grad_stash_bytes;
  // What the layer keeps across a stream of inference items, for one stream
  // of micro-batches of this size (a KV cache over the previous chunk's
  // tokens): docs/design.md "Inference". Absent: 0, a layer without state.
  std::optional<std::int64_t> state_bytes;

  bool operator==(const ProfileSample&) const = default;
};

struct LayerProfile {
  std::string name;
  std::string kind;
  std::int64_t param_bytes = 0;
  // This layer's share of the optimizer STEP; independent of micro-batch size.
  double optimizer_us = 0;
  std::vector<ProfileSample> samples;  // sorted by micro_batch_size, sizes distinct
  // A tied embedding (llama's tied=1): the bytes of the matrix this layer
  // holds as one with another layer's, the first layer's token table and the
  // last layer's unembedding; both give it, equal, or neither does. Their
  // gradients, this many bytes, are summed before each optimizer step
  // (docs/design.md "Tied embeddings"). 0: nothing shared.
  std::int64_t tied_bytes = 0;

  // Whether the samples give bwd_input_us/bwd_weight_us (all of them do, or none).
  [[nodiscard]] bool has_split_backward() const {
    return !samples.empty() && samples.front().bwd_input_us.has_value();
  }

  // The sampled micro-batch sizes, ascending.
  [[nodiscard]] std::vector<int> micro_batch_sizes() const {
    std::vector<int> sizes;
    for (const auto& s : samples) sizes.push_back(s.micro_batch_size);
    return sizes;
  }

  bool operator==(const LayerProfile&) const = default;
};

// One measured size of a link: the one-way time of a message of `bytes`.
struct LinkPoint {
  std::int64_t bytes = 0;
  double one_way_us = 0;

  bool operator==(const LinkPoint&) const = default;
};

// A directed rank-to-rank link: a message of n bytes takes
// latency_us + n / (bandwidth_GBps * 1e3) microseconds. GB = 1e9 bytes.
// A measured link also keeps how, and the points it was fitted to
// (profiles/link_fit.hpp), so that the fit's error can be shown: a
// ping-pong's points, and, where the bandwidth was refitted to the messages
// of a real pipeline, those (one per micro-batch size: its median message).
struct Link {
  double latency_us = 0;
  double bandwidth_GBps = 0;
  std::string measured_with;      // "" when not measured: "MPI ping-pong, ranks 0 and 1 on one node"
  std::vector<LinkPoint> points;  // ascending bytes; empty when not measured
  std::vector<LinkPoint> pipeline_points;  // ascending bytes; empty when the ping-pong alone decided
  // The collectives' own parameters where fitted (profiles/collectives.hpp:
  // each step's latency and each rank's bandwidth, one way, nccl-tests' bus
  // bandwidth): a data-parallel reduction over this link takes them instead
  // of the point-to-point numbers above. nullopt: those.
  std::optional<CollectiveLink> collective;
  // Where the reduce-scatter and all-gather were fitted too (ZeRO's; JSON:
  // collective.reduce_scatter, collective.all_gather): theirs, for those
  // collectives; nullopt: `collective`'s.
  std::optional<CollectiveLink> reduce_scatter;
  std::optional<CollectiveLink> all_gather;
  // A tensor-parallel profile's all-reduces as its blocks ran them while
  // profiled, fitted alike (JSON: tensor_collectives.all_reduce): each part
  // waits in them for the others. nullopt: not measured (`collective`'s).
  std::optional<CollectiveLink> tensor_all_reduce;
  // A context-parallel profile's all-gather of the keys and values and
  // reduce-scatter of their gradients as its blocks ran them while profiled
  // (each call timed, the medians fitted as collective_ring_fit fits them;
  // JSON: context_collectives.all_gather, .reduce_scatter): inside a pass a
  // call also waits for the other members, which no probe of its own sees.
  // nullopt: not measured (a prediction takes the fits above).
  std::optional<CollectiveLink> context_all_gather;
  std::optional<CollectiveLink> context_reduce_scatter;

  bool operator==(const Link&) const = default;
};

// Ranks that compute at the same time share the machine (memory bandwidth
// and caches; on a GPU its L2 and HBM): while `busy_peers` other ranks
// compute throughout, an action takes (1 + slowdown) times its profiled
// time (sim/contention.hpp).
struct ContentionPoint {
  int busy_peers = 0;
  double slowdown = 0;

  bool operator==(const ContentionPoint&) const = default;
};

inline constexpr double kMaxSlowdown = 100;  // what a contention point may say: 101 times as long

struct Profile {
  // What the layers were timed for: "training" (forward, backward and the
  // optimizer's step in each pass) or "inference" (passes of forwards alone,
  // gpipe-run profile --workload inference: each forward finds the caches as a
  // stream leaves them; its backward times are 0, so training refuses it).
  std::string workload = "training";
  std::string device;  // the hardware it was measured on
  // The device's memory capacity, where the profile knows it (an analytic
  // profile: its device table's row); `--memory-limit device` starts from it.
  std::optional<std::int64_t> device_memory_bytes;
  std::string source;  // one of kProfileSources
  // What the numbers were measured from, where the source alone does not say
  // (a torch-trace profile: the torch version and each trace with its size);
  // and each field that is not measured, with what stands in for it. Empty: none.
  std::string measured_from;
  std::vector<std::string> not_measured;
  std::string dtype;
  std::string model;   // the model SPEC string (a torch-trace profile: the name it was given, torch:GPT_0)
  // Tensor parallelism (models/tensor_parallel.hpp): the layers are one GPU's
  // of a group of this many, their passes with the group's collectives.
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  // Context parallelism (models/context_parallel.hpp): the layers are one
  // GPU's of a group of this many sharing each sequence (after T); a stage
  // spans T x C GPUs, and its gradients are reduced over D x C.
  int context_parallel = 1;
  // How the group shares keys and values: Llama 3's all-gather (what the
  // executor runs and measures), or the ring's passes around it.
  models::ContextParallelForm context_form = models::ContextParallelForm::all_gather;
  Link link;
  std::vector<LayerProfile> layers;  // in model order, names unique
  // The bytes of the tied matrix (LayerProfile::tied_bytes), 0 when none.
  [[nodiscard]] std::int64_t tied_bytes() const { return layers.empty() ? 0 : layers.front().tied_bytes; }
  // Ascending busy_peers, each at least 1; empty when not measured (the
  // layers' times then stand whatever runs beside them).
  std::vector<ContentionPoint> contention;

  bool operator==(const Profile&) const = default;
};

inline constexpr std::string_view kProfileFormat = "gpipe-profile";
inline constexpr int kProfileVersion = 1;
inline constexpr std::string_view kProfileSources[] = {"cupti", "cpu", "analytic", "torch-trace"};

// Validates and converts. Throws InputError naming the origin (a file name, or
// any label the caller picks) and the field, e.g.
// "p.json: layers[3].samples[0].fwd_us: expected a non-negative number".
// Unknown extra fields are ignored. Samples are returned sorted by size.
[[nodiscard]] Profile profile_from_json(const nlohmann::json& json, std::string_view origin);

// Reads and validates a profile file; InputError names the file when it is
// missing, unreadable, not JSON or not a valid profile.
[[nodiscard]] Profile load_profile(const std::filesystem::path& path);

// The JSON form that profile_from_json reads back to an equal Profile.
// optimizer_us is written only when non-zero.
[[nodiscard]] nlohmann::json to_json(const Profile& profile);

// Writes to_json(profile), indented; InputError naming the file if it cannot.
void write_profile(const Profile& profile, const std::filesystem::path& path);

}  // namespace gpipe::profiles
