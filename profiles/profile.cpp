#include "profiles/profile.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"
#include "profiles/limits.hpp"

namespace gpipe::profiles {
namespace {

using nlohmann::json;

// A profile's errors: "ORIGIN: layers[3].samples[0].fwd_us: expected a non-negative number".
constexpr JsonWording kProfileWording{};

// A time in us, 0 to kMaxTimeUs.
double time_us(const JsonField& at) {
  const double us = at.non_negative_number();
  if (us > kMaxTimeUs) {
    at.fail(fmt::format("{} us is more than the {:g} us (11.6 days) a time may be", us, kMaxTimeUs));
  }
  return us;
}

// Byte counts must be JSON integers: 1.5 bytes is a broken writer, not a size.
std::int64_t non_negative_integer(const JsonField& at) {
  return at.integer(0, std::numeric_limits<std::int64_t>::max(), "a non-negative integer");
}

// A byte count, 0 to kMaxBytes.
std::int64_t bytes(const JsonField& at) {
  const std::int64_t n = non_negative_integer(at);
  if (n > kMaxBytes) at.fail(fmt::format("{} bytes is more than the 2^50 (1 PiB) a size may be", n));
  return n;
}

int positive_int(const JsonField& at) {
  return static_cast<int>(at.integer(1, std::numeric_limits<int>::max(), "a positive integer"));
}

ProfileSample read_sample(const JsonField& at) {
  at.expect_object();
  ProfileSample s;
  s.micro_batch_size = positive_int(at.member("micro_batch_size"));
  s.fwd_us = time_us(at.member("fwd_us"));
  s.bwd_us = time_us(at.member("bwd_us"));
  const auto input = at.optional_member("bwd_input_us");
  const auto weight = at.optional_member("bwd_weight_us");
  if (input && !weight) {
    at.fail_member("bwd_weight_us", "is missing, but bwd_input_us is given (give both or neither)");
  }
  if (weight && !input) {
    at.fail_member("bwd_input_us", "is missing, but bwd_weight_us is given (give both or neither)");
  }
  if (input) s.bwd_input_us = time_us(*input);
  if (weight) s.bwd_weight_us = time_us(*weight);
  s.input_bytes = bytes(at.member("input_bytes"));
  s.output_bytes = bytes(at.member("output_bytes"));
  s.activation_bytes = bytes(at.member("activation_bytes"));
  if (s.activation_bytes < s.input_bytes) {
    // docs/design.md: activation_bytes includes the layer's input; the memory model
    // frees A_s - In_s after a recomputed forward, which must not be negative.
    at.fail_member("activation_bytes",
                   fmt::format("{} is less than input_bytes {} (it includes the layer's input)",
                               s.activation_bytes, s.input_bytes));
  }
  if (const auto kept = at.optional_member("weight_grad_stash_bytes")) {
    s.weight_grad_stash_bytes = bytes(*kept);
    if (*s.weight_grad_stash_bytes > s.activation_bytes) {
      at.fail_member("weight_grad_stash_bytes",
                     fmt::format("{} exceeds activation_bytes {} (it is the share of them that W keeps)",
                                 *s.weight_grad_stash_bytes, s.activation_bytes));
    }
  }
  if (const auto state = at.optional_member("state_bytes")) s.state_bytes = bytes(*state);
  return s;
}

LayerProfile read_layer(const JsonField& at) {
  at.expect_object();
  LayerProfile layer;
  layer.name = at.member("name").non_empty_string();
  layer.kind = at.member("kind").non_empty_string();
  layer.param_bytes = bytes(at.member("param_bytes"));
  if (const auto optimizer = at.optional_member("optimizer_us")) {
    layer.optimizer_us = time_us(*optimizer);
  }
  if (const auto tied = at.optional_member("tied_bytes")) layer.tied_bytes = bytes(*tied);
  const JsonField samples = at.member("samples");
  const std::size_t count = samples.non_empty_array_size();
  std::map<int, std::size_t> index_of_size;
  for (std::size_t i = 0; i < count; ++i) {
    const JsonField sample_at = samples.element(i);
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
auto read_ascending_points(const JsonField& points, std::string_view key, const ReadPoint& read_point,
                           const KeyOf& key_of) {
  std::vector<decltype(read_point(points))> out;
  const std::size_t count = points.non_empty_array_size();
  for (std::size_t i = 0; i < count; ++i) {
    const JsonField point = points.element(i);
    point.expect_object();
    auto p = read_point(point);
    if (!out.empty() && key_of(p) <= key_of(out.back())) {
      point.member(key).fail("must be larger than the point before");
    }
    out.push_back(p);
  }
  return out;
}

// {bytes, one_way_us}, ascending in bytes.
std::vector<LinkPoint> read_link_points(const JsonField& points) {
  return read_ascending_points(
      points, "bytes",
      [](const JsonField& point) {
        return LinkPoint{.bytes = bytes(point.member("bytes")),
                         .one_way_us = time_us(point.member("one_way_us"))};
      },
      [](const LinkPoint& p) { return p.bytes; });
}

Link read_link(const JsonField& at) {
  at.expect_object();
  Link link{.latency_us = time_us(at.member("latency_us")),
            .bandwidth_GBps = at.member("bandwidth_GBps").positive_number()};
  if (link.bandwidth_GBps < kMinBandwidthGBps || link.bandwidth_GBps > kMaxBandwidthGBps) {
    at.member("bandwidth_GBps")
        .fail(fmt::format("{:g} GB/s is outside the {:g} to {:g} GB/s a link may have", link.bandwidth_GBps,
                          kMinBandwidthGBps, kMaxBandwidthGBps));
  }
  const auto read = [](const JsonField& fit) {
    fit.expect_object();
    return CollectiveLink{.latency_us = time_us(fit.member("latency_us")),
                          .bandwidth_GBps = fit.member("bandwidth_GBps").positive_number()};
  };
  if (const auto collective = at.optional_member("collective")) {
    link.collective = read(*collective);
    if (const auto fit = collective->optional_member("reduce_scatter")) link.reduce_scatter = read(*fit);
    if (const auto fit = collective->optional_member("all_gather")) link.all_gather = read(*fit);
  }
  if (const auto tensor = at.optional_member("tensor_collectives")) {
    tensor->expect_object();
    if (const auto fit = tensor->optional_member("all_reduce")) link.tensor_all_reduce = read(*fit);
  }
  if (const auto context = at.optional_member("context_collectives")) {
    context->expect_object();
    if (const auto fit = context->optional_member("all_gather")) link.context_all_gather = read(*fit);
    if (const auto fit = context->optional_member("reduce_scatter")) link.context_reduce_scatter = read(*fit);
  }
  const auto measured = at.optional_member("measured");
  if (!measured) return link;
  measured->expect_object();
  link.measured_with = measured->member("with").non_empty_string();
  link.points = read_link_points(measured->member("points"));
  if (const auto pipeline = measured->optional_member("pipeline_points")) {
    link.pipeline_points = read_link_points(*pipeline);
  }
  return link;
}

// A tied matrix is the first layer's and the last's, the same bytes in both.
void check_tied(const JsonField& layers, const std::vector<LayerProfile>& read) {
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
std::vector<ContentionPoint> read_contention(const JsonField& points) {
  return read_ascending_points(
      points, "busy_peers",
      [](const JsonField& point) {
        ContentionPoint c{.busy_peers = positive_int(point.member("busy_peers")),
                          .slowdown = point.member("slowdown").non_negative_number()};
        if (c.slowdown > kMaxSlowdown) {
          point.member("slowdown").fail(
              fmt::format("{:g} is more than the {:g} a slowdown may be", c.slowdown, kMaxSlowdown));
        }
        return c;
      },
      [](const ContentionPoint& c) { return c.busy_peers; });
}

std::string read_source(const JsonField& at) {
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
  if (link.tensor_all_reduce) out["tensor_collectives"]["all_reduce"] = fit_json(*link.tensor_all_reduce);
  if (link.context_all_gather) out["context_collectives"]["all_gather"] = fit_json(*link.context_all_gather);
  if (link.context_reduce_scatter) {
    out["context_collectives"]["reduce_scatter"] = fit_json(*link.context_reduce_scatter);
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
  const JsonField root(document, origin, kProfileWording);
  root.expect_object();
  const JsonField format = root.member("format");
  if (!format.value().is_string() || format.value().get<std::string>() != kProfileFormat) {
    format.fail(fmt::format("expected \"{}\"", kProfileFormat));
  }
  const JsonField version = root.member("version");
  if (!version.value().is_number_integer() ||
      version.value().get<std::int64_t>() != kProfileVersion) {
    version.fail(fmt::format("unsupported version {} (this build reads version {})",
                             version.value().dump(), kProfileVersion));
  }

  Profile profile;
  profile.device = root.member("device").string();
  if (const auto memory = root.optional_member("device_memory_bytes")) {
    profile.device_memory_bytes = non_negative_integer(*memory);
  }
  profile.source = read_source(root.member("source"));
  profile.dtype = root.member("dtype").string();
  profile.model = root.member("model").string();
  if (const auto from = root.optional_member("measured_from")) profile.measured_from = from->string();
  if (const auto unmeasured = root.optional_member("not_measured")) {
    const std::size_t n = unmeasured->non_empty_array_size();
    for (std::size_t i = 0; i < n; ++i) profile.not_measured.push_back(unmeasured->element(i).non_empty_string());
  }
  profile.link = read_link(root.member("link"));
  if (const auto contention = root.optional_member("contention")) profile.contention = read_contention(*contention);
  if (const auto tp = root.optional_member("tensor_parallel")) profile.tensor_parallel = positive_int(*tp);
  if (const auto sp = root.optional_member("sequence_parallel")) {
    profile.sequence_parallel = sp->boolean();
    if (profile.sequence_parallel && profile.tensor_parallel < 2) {
      sp->fail("sequence parallelism needs a tensor_parallel of 2 or more");
    }
  }
  if (const auto cp = root.optional_member("context_parallel")) profile.context_parallel = positive_int(*cp);
  if (const auto form = root.optional_member("context_parallel_form")) {
    const auto parsed = models::parse_context_parallel_form(form->string());
    if (!parsed) form->fail(fmt::format("'{}' is neither all-gather nor ring", form->string()));
    if (profile.context_parallel < 2) form->fail("a form of context parallelism needs a context_parallel of 2 or more");
    profile.context_form = *parsed;
  }
  if (const auto workload = root.optional_member("workload")) {
    profile.workload = workload->string();
    if (profile.workload != "training" && profile.workload != "inference") {
      workload->fail(fmt::format("'{}' is neither training nor inference", profile.workload));
    }
  }

  const JsonField layers = root.member("layers");
  const std::size_t count = layers.non_empty_array_size();
  std::map<std::string, std::size_t, std::less<>> index_of_name;
  profile.layers.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const JsonField layer_at = layers.element(i);
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
  if (profile.context_parallel != 1) out["context_parallel"] = profile.context_parallel;
  if (profile.context_form != models::ContextParallelForm::all_gather) {
    out["context_parallel_form"] = std::string(models::to_string(profile.context_form));
  }
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
