#include "profiles/profile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "profiles/limits.hpp"

namespace gpipe::profiles {
namespace {

using nlohmann::json;

// A value with its place in the document, so that every error names the
// field at fault: "ORIGIN: layers[3].samples[0].fwd_us: ...".
class Field {
 public:
  Field(const json& value, std::string_view origin, std::string path)
      : value_(&value), origin_(origin), path_(std::move(path)) {}

  [[noreturn]] void fail(std::string_view message) const {
    if (path_.empty()) throw InputError(fmt::format("{}: {}", origin_, message));
    throw InputError(fmt::format("{}: {}: {}", origin_, path_, message));
  }

  [[nodiscard]] const json& value() const { return *value_; }

  // Fails naming the member `key` of this object, present or not.
  [[noreturn]] void fail_member(std::string_view key, std::string_view message) const {
    Field(*value_, origin_, child_path(key)).fail(message);
  }

  [[nodiscard]] Field object_member(std::string_view key) const {
    const auto found = value_->find(key);
    if (found == value_->end()) fail_member(key, "is missing");
    return Field(*found, origin_, child_path(key));
  }

  [[nodiscard]] std::optional<Field> optional_member(std::string_view key) const {
    const auto found = value_->find(key);
    if (found == value_->end()) return std::nullopt;
    return Field(*found, origin_, child_path(key));
  }

  [[nodiscard]] Field element(std::size_t index) const {
    return Field((*value_)[index], origin_, fmt::format("{}[{}]", path_, index));
  }

  void expect_object() const {
    if (!value_->is_object()) fail(path_.empty() ? "expected a JSON object" : "expected an object");
  }

  // The number of elements; fails unless a non-empty array.
  [[nodiscard]] std::size_t non_empty_array_size() const {
    if (!value_->is_array() || value_->empty()) fail("expected a non-empty array");
    return value_->size();
  }

  [[nodiscard]] std::string string() const {
    if (!value_->is_string()) fail("expected a string");
    return value_->get<std::string>();
  }

  [[nodiscard]] std::string non_empty_string() const {
    std::string text = string();
    if (text.empty()) fail("expected a non-empty string");
    return text;
  }

  [[nodiscard]] double non_negative_number() const {
    // is_number() is false for booleans, so `true` is not read as 1.
    if (!value_->is_number() || !std::isfinite(value_->get<double>()) ||
        value_->get<double>() < 0) {
      fail("expected a non-negative number");
    }
    return value_->get<double>();
  }

  [[nodiscard]] double positive_number() const {
    if (!value_->is_number() || !std::isfinite(value_->get<double>()) ||
        value_->get<double>() <= 0) {
      fail("expected a positive number");
    }
    return value_->get<double>();
  }

  // A time in us, 0 to kMaxTimeUs.
  [[nodiscard]] double time_us() const {
    const double us = non_negative_number();
    if (us > kMaxTimeUs) fail(fmt::format("{} us is more than the {:g} us (11.6 days) a time may be", us, kMaxTimeUs));
    return us;
  }

  // A byte count, 0 to kMaxBytes.
  [[nodiscard]] std::int64_t bytes() const {
    const std::int64_t n = non_negative_integer();
    if (n > kMaxBytes) fail(fmt::format("{} bytes is more than the 2^50 (1 PiB) a size may be", n));
    return n;
  }

  // Byte counts must be JSON integers: 1.5 bytes is a broken writer, not a size.
  [[nodiscard]] std::int64_t non_negative_integer() const {
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    const bool ok = value_->is_number_unsigned()  ? value_->get<std::uint64_t>() <= kMax
                    : value_->is_number_integer() ? value_->get<std::int64_t>() >= 0
                                                  : false;
    if (!ok) fail("expected a non-negative integer");
    return value_->get<std::int64_t>();
  }

  [[nodiscard]] int positive_int() const {
    const bool ok = value_->is_number_integer() && value_->get<std::int64_t>() > 0 &&
                    value_->get<std::int64_t>() <= std::numeric_limits<int>::max();
    if (!ok) fail("expected a positive integer");
    return value_->get<int>();
  }

 private:
  [[nodiscard]] std::string child_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

  const json* value_;
  std::string_view origin_;
  std::string path_;
};

ProfileSample read_sample(const Field& at) {
  at.expect_object();
  ProfileSample s;
  s.micro_batch_size = at.object_member("micro_batch_size").positive_int();
  s.fwd_us = at.object_member("fwd_us").time_us();
  s.bwd_us = at.object_member("bwd_us").time_us();
  const auto input = at.optional_member("bwd_input_us");
  const auto weight = at.optional_member("bwd_weight_us");
  if (input && !weight) {
    at.fail_member("bwd_weight_us", "is missing, but bwd_input_us is given (give both or neither)");
  }
  if (weight && !input) {
    at.fail_member("bwd_input_us", "is missing, but bwd_weight_us is given (give both or neither)");
  }
  if (input) s.bwd_input_us = input->time_us();
  if (weight) s.bwd_weight_us = weight->time_us();
  s.input_bytes = at.object_member("input_bytes").bytes();
  s.output_bytes = at.object_member("output_bytes").bytes();
  s.activation_bytes = at.object_member("activation_bytes").bytes();
  if (s.activation_bytes < s.input_bytes) {
    // docs/design.md: activation_bytes includes the layer's input; the memory model
    // frees A_s - In_s after a recomputed forward, which must not be negative.
    at.fail_member("activation_bytes",
                   fmt::format("{} is less than input_bytes {} (it includes the layer's input)",
                               s.activation_bytes, s.input_bytes));
  }
  if (const auto kept = at.optional_member("weight_grad_stash_bytes")) {
    s.weight_grad_stash_bytes = kept->bytes();
    if (*s.weight_grad_stash_bytes > s.activation_bytes) {
      at.fail_member("weight_grad_stash_bytes",
                     fmt::format("{} exceeds activation_bytes {} (it is the share of them that W keeps)",
                                 *s.weight_grad_stash_bytes, s.activation_bytes));
    }
  }
  if (const auto state = at.optional_member("state_bytes")) s.state_bytes = state->bytes();
  return s;
}

LayerProfile read_layer(const Field& at) {
  at.expect_object();
  LayerProfile layer;
  layer.name = at.object_member("name").non_empty_string();
  layer.kind = at.object_member("kind").non_empty_string();
  layer.param_bytes = at.object_member("param_bytes").bytes();
  if (const auto optimizer = at.optional_member("optimizer_us")) {
    layer.optimizer_us = optimizer->time_us();
  }
  if (const auto tied = at.optional_member("tied_bytes")) layer.tied_bytes = tied->bytes();
  const Field samples = at.object_member("samples");
  const std::size_t count = samples.non_empty_array_size();
  std::map<int, std::size_t> index_of_size;
  for (std::size_t i = 0; i < count; ++i) {
    const Field sample_at = samples.element(i);
    ProfileSample sample = read_sample(sample_at);
    // Interpolating I and W needs them at every size: a layer is all split or not at all.
    const bool split = sample.bwd_input_us.has_value();
    if (i > 0 && split != layer.samples.front().bwd_input_us.has_value()) {
      sample_at.fail_member("bwd_input_us",
                            split ? "is given, but samples[0] of this layer has no split backward"
                                  : "is missing, but samples[0] of this layer gives it");
    }
    const auto [it, inserted] = index_of_size.emplace(sample.micro_batch_size, i);
    if (!inserted) {
      sample_at.fail_member("micro_batch_size",
                            fmt::format("duplicate size {} (also samples[{}])",
                                        sample.micro_batch_size, it->second));
    }
    layer.samples.push_back(std::move(sample));
  }
  std::sort(layer.samples.begin(), layer.samples.end(),
            [](const ProfileSample& a, const ProfileSample& b) {
              return a.micro_batch_size < b.micro_batch_size;
            });
  return layer;
}

// A non-empty list of points, each read by read_point(field), strictly
// ascending in the member `key` (key_of: its value in a point).
template <class ReadPoint, class KeyOf>
auto read_ascending_points(const Field& points, std::string_view key, const ReadPoint& read_point,
                           const KeyOf& key_of) {
  std::vector<decltype(read_point(points))> out;
  const std::size_t count = points.non_empty_array_size();
  for (std::size_t i = 0; i < count; ++i) {
    const Field point = points.element(i);
    point.expect_object();
    auto p = read_point(point);
    if (!out.empty() && key_of(p) <= key_of(out.back())) {
      point.object_member(key).fail("must be larger than the point before");
    }
    out.push_back(p);
  }
  return out;
}

// {bytes, one_way_us}, ascending in bytes.
std::vector<LinkPoint> read_link_points(const Field& points) {
  return read_ascending_points(
      points, "bytes",
      [](const Field& point) {
        return LinkPoint{.bytes = point.object_member("bytes").bytes(),
                         .one_way_us = point.object_member("one_way_us").time_us()};
      },
      [](const LinkPoint& p) { return p.bytes; });
}

Link read_link(const Field& at) {
  at.expect_object();
  Link link{.latency_us = at.object_member("latency_us").time_us(),
            .bandwidth_GBps = at.object_member("bandwidth_GBps").positive_number()};
  if (link.bandwidth_GBps < kMinBandwidthGBps || link.bandwidth_GBps > kMaxBandwidthGBps) {
    at.object_member("bandwidth_GBps")
        .fail(fmt::format("{:g} GB/s is outside the {:g} to {:g} GB/s a link may have", link.bandwidth_GBps,
                          kMinBandwidthGBps, kMaxBandwidthGBps));
  }
  if (const auto collective = at.optional_member("collective")) {
    const auto read = [](const Field& fit) {
      fit.expect_object();
      return CollectiveLink{.latency_us = fit.object_member("latency_us").time_us(),
                            .bandwidth_GBps = fit.object_member("bandwidth_GBps").positive_number()};
    };
    link.collective = read(*collective);
    if (const auto fit = collective->optional_member("reduce_scatter")) link.reduce_scatter = read(*fit);
    if (const auto fit = collective->optional_member("all_gather")) link.all_gather = read(*fit);
  }
  const auto measured = at.optional_member("measured");
  if (!measured) return link;
  measured->expect_object();
  link.measured_with = measured->object_member("with").non_empty_string();
  link.points = read_link_points(measured->object_member("points"));
  if (const auto pipeline = measured->optional_member("pipeline_points")) {
    link.pipeline_points = read_link_points(*pipeline);
  }
  return link;
}

// A tied matrix is the first layer's and the last's, the same bytes in both.
void check_tied(const Field& layers, const std::vector<LayerProfile>& read) {
  const std::size_t last = read.size() - 1;
  for (std::size_t i = 0; i < read.size(); ++i) {
    if (read[i].tied_bytes == 0) continue;
    if (last == 0 || (i != 0 && i != last)) {
      layers.element(i).fail_member("tied_bytes", "only the first and the last layer may share a matrix "
                                                  "(a tied embedding)");
    }
  }
  if (last > 0 && read.front().tied_bytes != read.back().tied_bytes) {
    const std::size_t at = read.front().tied_bytes == 0 ? 0 : last;
    layers.element(at).fail_member(
        "tied_bytes", fmt::format("layers[{}] gives {} and layers[{}] gives {}: the first and the last layer "
                                  "share one matrix, so both give its bytes",
                                  0, read.front().tied_bytes, last, read.back().tied_bytes));
  }
}

// {busy_peers, slowdown}, ascending in busy_peers.
std::vector<ContentionPoint> read_contention(const Field& points) {
  return read_ascending_points(
      points, "busy_peers",
      [](const Field& point) {
        ContentionPoint c{.busy_peers = point.object_member("busy_peers").positive_int(),
                          .slowdown = point.object_member("slowdown").non_negative_number()};
        if (c.slowdown > kMaxSlowdown) {
          point.object_member("slowdown").fail(
              fmt::format("{:g} is more than the {:g} a slowdown may be", c.slowdown, kMaxSlowdown));
        }
        return c;
      },
      [](const ContentionPoint& c) { return c.busy_peers; });
}

std::string read_source(const Field& at) {
  std::string source = at.string();
  if (std::find(std::begin(kProfileSources), std::end(kProfileSources), source) ==
      std::end(kProfileSources)) {
    at.fail(fmt::format("expected one of cupti, cpu, analytic (got '{}')", source));
  }
  return source;
}

json link_to_json(const Link& link) {
  json out = {{"latency_us", link.latency_us}, {"bandwidth_GBps", link.bandwidth_GBps}};
  const auto fit_json = [](const CollectiveLink& fit) {
    return json{{"latency_us", fit.latency_us}, {"bandwidth_GBps", fit.bandwidth_GBps}};
  };
  if (link.collective) {
    out["collective"] = fit_json(*link.collective);
    if (link.reduce_scatter) out["collective"]["reduce_scatter"] = fit_json(*link.reduce_scatter);
    if (link.all_gather) out["collective"]["all_gather"] = fit_json(*link.all_gather);
  }
  if (link.measured_with.empty()) return out;
  const auto points_json = [](const std::vector<LinkPoint>& points) {
    json list = json::array();
    for (const LinkPoint& p : points) list.push_back({{"bytes", p.bytes}, {"one_way_us", p.one_way_us}});
    return list;
  };
  out["measured"] = {{"with", link.measured_with}, {"points", points_json(link.points)}};
  if (!link.pipeline_points.empty()) out["measured"]["pipeline_points"] = points_json(link.pipeline_points);
  return out;
}

json sample_to_json(const ProfileSample& s) {
  json out = {{"micro_batch_size", s.micro_batch_size},
              {"fwd_us", s.fwd_us},
              {"bwd_us", s.bwd_us},
              {"input_bytes", s.input_bytes},
              {"output_bytes", s.output_bytes},
              {"activation_bytes", s.activation_bytes}};
  if (s.bwd_input_us) out["bwd_input_us"] = *s.bwd_input_us;
  if (s.bwd_weight_us) out["bwd_weight_us"] = *s.bwd_weight_us;
  if (s.weight_grad_stash_bytes) out["weight_grad_stash_bytes"] = *s.weight_grad_stash_bytes;
  if (s.state_bytes) out["state_bytes"] = *s.state_bytes;
  return out;
}

}  // namespace

Profile profile_from_json(const json& document, std::string_view origin) {
  const Field root(document, origin, "");
  root.expect_object();
  const Field format = root.object_member("format");
  if (!format.value().is_string() || format.value().get<std::string>() != kProfileFormat) {
    format.fail(fmt::format("expected \"{}\"", kProfileFormat));
  }
  const Field version = root.object_member("version");
  if (!version.value().is_number_integer() ||
      version.value().get<std::int64_t>() != kProfileVersion) {
    version.fail(fmt::format("unsupported version {} (this build reads version {})",
                             version.value().dump(), kProfileVersion));
  }

  Profile profile;
  profile.device = root.object_member("device").string();
  if (const auto memory = root.optional_member("device_memory_bytes")) {
    profile.device_memory_bytes = memory->non_negative_integer();
  }
  profile.source = read_source(root.object_member("source"));
  profile.dtype = root.object_member("dtype").string();
  profile.model = root.object_member("model").string();
  if (const auto from = root.optional_member("measured_from")) profile.measured_from = from->string();
  if (const auto unmeasured = root.optional_member("not_measured")) {
    const std::size_t n = unmeasured->non_empty_array_size();
    for (std::size_t i = 0; i < n; ++i) profile.not_measured.push_back(unmeasured->element(i).non_empty_string());
  }
  profile.link = read_link(root.object_member("link"));
  if (const auto contention = root.optional_member("contention")) profile.contention = read_contention(*contention);
  if (const auto tp = root.optional_member("tensor_parallel")) profile.tensor_parallel = tp->positive_int();
  if (const auto sp = root.optional_member("sequence_parallel")) {
    if (!sp->value().is_boolean()) sp->fail("expected true or false");
    profile.sequence_parallel = sp->value().get<bool>();
    if (profile.sequence_parallel && profile.tensor_parallel < 2) {
      sp->fail("sequence parallelism needs a tensor_parallel of 2 or more");
    }
  }
  if (const auto workload = root.optional_member("workload")) {
    profile.workload = workload->string();
    if (profile.workload != "training" && profile.workload != "inference") {
      workload->fail(fmt::format("'{}' is neither training nor inference", profile.workload));
    }
  }

  const Field layers = root.object_member("layers");
  const std::size_t count = layers.non_empty_array_size();
  std::map<std::string, std::size_t, std::less<>> index_of_name;
  profile.layers.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const Field layer_at = layers.element(i);
    LayerProfile layer = read_layer(layer_at);
    const auto [it, inserted] = index_of_name.emplace(layer.name, i);
    if (!inserted) {
      layer_at.fail_member("name", fmt::format("duplicate layer name '{}' (also layers[{}])",
                                               layer.name, it->second));
    }
    profile.layers.push_back(std::move(layer));
  }
  check_tied(layers, profile.layers);
  return profile;
}

Profile load_profile(const std::filesystem::path& path) {
  return profile_from_json(read_json_file(path), path.string());
}

namespace {

json layer_to_json(const LayerProfile& layer) {
  json samples = json::array();
  for (const auto& sample : layer.samples) samples.push_back(sample_to_json(sample));
  json out = {{"name", layer.name},
              {"kind", layer.kind},
              {"param_bytes", layer.param_bytes},
              {"samples", std::move(samples)}};
  if (layer.optimizer_us != 0) out["optimizer_us"] = layer.optimizer_us;
  if (layer.tied_bytes != 0) out["tied_bytes"] = layer.tied_bytes;
  return out;
}

json head_to_json(const Profile& profile, json layers) {
  json out = {{"format", kProfileFormat},
              {"version", kProfileVersion},
              {"device", profile.device},
              {"source", profile.source},
              {"dtype", profile.dtype},
              {"model", profile.model},
              {"link", link_to_json(profile.link)},
              {"layers", std::move(layers)}};
  if (profile.device_memory_bytes) out["device_memory_bytes"] = *profile.device_memory_bytes;
  if (!profile.measured_from.empty()) out["measured_from"] = profile.measured_from;
  if (!profile.not_measured.empty()) out["not_measured"] = profile.not_measured;
  if (profile.workload != "training") out["workload"] = profile.workload;
  if (profile.tensor_parallel != 1) out["tensor_parallel"] = profile.tensor_parallel;
  if (profile.sequence_parallel) out["sequence_parallel"] = true;
  if (!profile.contention.empty()) {
    json points = json::array();
    for (const ContentionPoint& c : profile.contention) {
      points.push_back({{"busy_peers", c.busy_peers}, {"slowdown", c.slowdown}});
    }
    out["contention"] = std::move(points);
  }
  return out;
}

}  // namespace

json to_json(const Profile& profile) {
  json layers = json::array();
  for (const auto& layer : profile.layers) layers.push_back(layer_to_json(layer));
  return head_to_json(profile, std::move(layers));
}

// The text of to_json(profile).dump(2), written a layer at a time: a profile
// of 16384 layers at 256 sizes is a DOM of gigabytes, and nlohmann's
// destructor allocates, so running out of memory in the writer would end in
// std::terminate while unwinding instead of one line. Here at most one
// layer's JSON is alive at a time.
void write_profile(const Profile& profile, const std::filesystem::path& path) {
  // The top level, with a marker where the layers go (keys keep dump's order).
  const std::string marker = "\"gpipe-layers-go-here\"";
  const std::string head = head_to_json(profile, "gpipe-layers-go-here").dump(2);
  const std::size_t at = head.find(marker);
  std::ofstream out = open_for_writing(path);
  out << head.substr(0, at);
  if (profile.layers.empty()) {
    out << "[]";
  } else {
    out << "[";
    for (std::size_t i = 0; i < profile.layers.size(); ++i) {
      // Each layer sits two levels deep: its dump(2) lines indented by 4 more
      // (JSON strings hold no raw newline, so every newline is a line break).
      std::string text = layer_to_json(profile.layers[i]).dump(2);
      std::string indented;
      indented.reserve(text.size() + text.size() / 8);
      for (const char c : text) {
        indented += c;
        if (c == '\n') indented += "    ";
      }
      out << (i == 0 ? "\n    " : ",\n    ") << indented;
    }
    out << "\n  ]";
  }
  out << head.substr(at + marker.size()) << "\n";
  finish_writing(out, path);
}

}  // namespace gpipe::profiles
