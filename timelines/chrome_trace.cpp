#include "timelines/chrome_trace.hpp"

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/files.hpp"
#include "timelines/metrics.hpp"
#include "timelines/report_check.hpp"
#include "timelines/trace_lanes.hpp"

namespace gpipe::timelines {
namespace {

// The metrics a written trace carries in otherData, checked like a printed report.
Metrics checked_metrics(const Timeline& timeline) {
  Metrics m = compute_metrics(timeline);
  check_report(m, "the trace's metrics");
  return m;
}

using nlohmann::json;

constexpr const char* kFormat = "gpipe-trace";
constexpr int kVersion = 2;        // tid = lane + 1 (timelines/trace_lanes.hpp)
constexpr int kOldestVersion = 1;  // tid = lane
constexpr const char* kMemoryCounter = "activation memory";
constexpr const char* kCollectiveCategory = "collective";  // Timeline::collectives
// Times beyond this (about 31 years in ns) cannot come from a run; rejecting
// them keeps llround away from values it cannot represent.
constexpr double kMaxAbsUs = 1e15;
constexpr std::int64_t kMaxBytes = std::numeric_limits<std::int64_t>::max();

std::string_view category(Stream stream) {
  return stream == Stream::compute || stream == Stream::overlap ? "compute" : "comm";
}

// "rank 0 (stage 0)", "rank 0 (stages 0, 4)", or "rank 3" for a rank without stages.
std::string process_name(const TimelineInfo& info, int rank) {
  std::vector<int> stages;
  for (std::size_t s = 0; s < info.stage_to_rank.size(); ++s) {
    if (info.stage_to_rank[s].value == rank) stages.push_back(static_cast<int>(s));
  }
  if (stages.empty()) return fmt::format("rank {}", rank);
  if (stages.size() == 1) return fmt::format("rank {} (stage {})", rank, stages.front());
  return fmt::format("rank {} (stages {})", rank, fmt::join(stages, ", "));
}

void add_metadata(const TimelineInfo& info, const Timeline& timeline, const std::vector<int>& lanes,
                  const std::vector<int>& collective_lanes, json& events) {
  // Every rank shows its three streams; extra comm lanes where they were used.
  std::set<std::pair<int, int>> threads;
  for (int r = 0; r < info.num_ranks; ++r) {
    for (int t = 0; t < kNumStreams; ++t) threads.insert({r, t});
  }
  for (std::size_t i = 0; i < lanes.size(); ++i) threads.insert({timeline.actions[i].rank.value, lanes[i]});
  for (std::size_t i = 0; i < collective_lanes.size(); ++i) {
    threads.insert({timeline.collectives[i].rank.value, collective_lanes[i]});
  }
  for (int r = 0; r < info.num_ranks; ++r) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"name", process_name(info, r)}}}});
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
  }
  for (const auto& [r, lane] : threads) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"tid", tid_of_lane(lane)},
                      {"args", {{"name", lane_name(lane)}}}});
  }
}

json action_event(const TimedAction& a, int lane) {
  json event = {{"name", to_string(a.action)},
                {"cat", category(a.stream)},
                {"ph", "X"},
                {"pid", a.rank.value},
                {"tid", tid_of_lane(lane)},
                {"ts", to_us(a.start_ns)},
                {"dur", to_us(a.end_ns - a.start_ns)},
                {"args",
                 {{"stage", a.action.stage.value},
                  {"microbatch", a.action.microbatch.value},
                  {"kind", to_string(a.action.kind)}}}};
  // A reduction names its group: the same stage of every replica.
  if (a.stream == Stream::reduce) {
    event["args"]["group"] = fmt::format("stage {} of every data-parallel replica", a.action.stage.value);
  }
  return event;
}

// A tensor-parallel collective names the action it ran in and its group: the
// parts of the rank's stages.
json collective_event(const CollectiveSpan& c, int lane, int tensor_parallel) {
  return {{"name", c.collective},
          {"cat", kCollectiveCategory},
          {"ph", "X"},
          {"pid", c.rank.value},
          {"tid", tid_of_lane(lane)},
          {"ts", to_us(c.start_ns)},
          {"dur", to_us(c.end_ns - c.start_ns)},
          {"args",
           {{"within", to_string(c.within)},
            {"bytes", c.bytes},
            {"group", fmt::format("the {} tensor-parallel parts of rank {}", tensor_parallel, c.rank.value)}}}};
}

// One s/f pair from each send to the receive of the same data, where both
// ran. Viewers process a trace in time order and drop a flow whose f comes
// before its s (Perfetto: flow_end_without_start; timelines/trace_lint.hpp),
// and a measured receive often starts, waiting, before its send: so the s is
// at the send's start, and the f, bound to its enclosing slice ("bp": "e"),
// at the later of the two starts, kept inside the receive (before its end,
// where the lane's next slice may start).
void add_flows(const Timeline& timeline, const std::vector<int>& lanes, json& events) {
  const auto tid_of = [&](const TimedAction* a) {
    return tid_of_lane(lanes[static_cast<std::size_t>(a - timeline.actions.data())]);
  };
  std::unordered_map<schedules::Action, const TimedAction*> receives;
  for (const auto& a : timeline.actions) {
    if (a.action.kind == schedules::ActionKind::RECV_F || a.action.kind == schedules::ActionKind::RECV_B) {
      receives.emplace(a.action, &a);
    }
  }
  int id = 0;
  for (const auto& send : timeline.actions) {
    const auto [s, kind, m] = send.action;
    schedules::Action target;
    if (kind == schedules::ActionKind::SEND_F) {
      target = schedules::Action{schedules::Stage{s.value + 1}, schedules::ActionKind::RECV_F, m};
    } else if (kind == schedules::ActionKind::SEND_B) {
      target = schedules::Action{schedules::Stage{s.value - 1}, schedules::ActionKind::RECV_B, m};
    } else {
      continue;
    }
    const auto it = receives.find(target);
    if (it == receives.end()) continue;
    const std::string name = to_string(send.action);
    const TimedAction& receive = *it->second;
    const std::int64_t finish_ns =
        std::min(std::max(receive.start_ns, send.start_ns), std::max(receive.start_ns, receive.end_ns - 1));
    for (const auto& [ph, end, ts_ns] :
         {std::tuple{"s", &send, send.start_ns}, std::tuple{"f", &receive, finish_ns}}) {
      events.push_back({{"name", name},
                        {"cat", "flow"},
                        {"ph", ph},
                        {"bp", "e"},
                        {"id", id},
                        {"pid", end->rank.value},
                        {"tid", tid_of(end)},
                        {"ts", to_us(ts_ns)}});
    }
    ++id;
  }
}

json gpipe_data(const Timeline& timeline) {
  const TimelineInfo& info = timeline.info;
  json stage_to_rank = json::array();
  for (const schedules::Rank r : info.stage_to_rank) stage_to_rank.push_back(r.value);
  return {{"format", kFormat},
          {"version", kVersion},
          {"schedule",
           {{"name", info.schedule_name},
            {"num_ranks", info.num_ranks},
            {"num_stages", info.num_stages},
            {"num_microbatches", info.num_microbatches},
            {"recompute", to_string(info.recompute)},
            {"stage_to_rank", std::move(stage_to_rank)}}},
          {"source", {{"kind", info.source}, {"device", info.device}}},
          {"batch_size", info.batch_size},
          {"static_bytes", info.static_bytes},
          {"tensor_parallel", info.tensor_parallel},
          {"metrics", to_json(checked_metrics(timeline))}};
}

// Reads fields of the trace, naming the origin and the field's path (such as
// "traceEvents[12].ts") in every error.
class FieldReader {
 public:
  explicit FieldReader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& path, std::string_view why) const {
    throw InputError(fmt::format("{}: field '{}' {}", origin_, path, why));
  }
  [[nodiscard]] static std::string join(const std::string& prefix, const char* key) {
    return prefix.empty() ? key : prefix + "." + key;
  }
  // The field `key` of `parent`, or nullptr when it is absent.
  [[nodiscard]] static const json* find(const json& parent, const char* key) {
    const auto it = parent.find(key);
    return it == parent.end() ? nullptr : &*it;
  }
  // The field `key` of `parent`, whose own path is `prefix`; it must be present.
  [[nodiscard]] const json& get(const json& parent, const std::string& prefix,
                                const char* key) const {
    const json* value = find(parent, key);
    if (value == nullptr) fail(join(prefix, key), "is missing");
    return *value;
  }
  [[nodiscard]] const json& object(const json& parent, const std::string& prefix,
                                   const char* key) const {
    const json& value = get(parent, prefix, key);
    if (!value.is_object()) fail(join(prefix, key), "must be an object");
    return value;
  }
  [[nodiscard]] std::string string_at(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "must be a string");
    return value.get<std::string>();
  }
  [[nodiscard]] std::string string(const json& parent, const std::string& prefix,
                                   const char* key) const {
    return string_at(get(parent, prefix, key), join(prefix, key));
  }
  [[nodiscard]] std::int64_t integer_at(const json& value, const std::string& path,
                                        std::int64_t min, std::int64_t max) const {
    if (!value.is_number_integer()) fail(path, "must be an integer");
    const bool too_big =
        value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max);
    if (too_big || value.get<std::int64_t>() < min || value.get<std::int64_t>() > max) {
      fail(path, fmt::format("must be in [{}, {}]", min, max));
    }
    return value.get<std::int64_t>();
  }
  [[nodiscard]] std::int64_t integer(const json& parent, const std::string& prefix, const char* key,
                                     std::int64_t min = kMinInt64,
                                     std::int64_t max = kMaxInt64) const {
    return integer_at(get(parent, prefix, key), join(prefix, key), min, max);
  }
  // A non-negative int, such as a count of ranks.
  [[nodiscard]] int count(const json& parent, const std::string& prefix, const char* key) const {
    return static_cast<int>(integer(parent, prefix, key, 0, std::numeric_limits<int>::max()));
  }
  // A time in microseconds, as integer nanoseconds.
  [[nodiscard]] std::int64_t time_ns(const json& parent, const std::string& prefix,
                                     const char* key) const {
    const json& value = get(parent, prefix, key);
    if (!value.is_number()) fail(join(prefix, key), "must be a number");
    const double us = value.get<double>();
    if (!std::isfinite(us) || std::abs(us) > kMaxAbsUs) fail(join(prefix, key), "is out of range");
    return std::llround(us * 1000.0);
  }

 private:
  static constexpr std::int64_t kMinInt64 = std::numeric_limits<std::int64_t>::min();
  static constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
  std::string_view origin_;
};

TimelineInfo read_info(const json& trace, const FieldReader& in) {
  const std::string p = "otherData.gpipe";
  const json& g = in.object(in.object(trace, "", "otherData"), "otherData", "gpipe");
  if (in.string(g, p, "format") != kFormat) {
    in.fail(p + ".format", fmt::format("must be \"{}\"", kFormat));
  }
  const std::int64_t version = in.integer(g, p, "version");
  if (version < kOldestVersion || version > kVersion) {
    in.fail(p + ".version", fmt::format("must be {} to {}", kOldestVersion, kVersion));
  }
  TimelineInfo info;
  const std::string ps = p + ".schedule";
  const json& sched = in.object(g, p, "schedule");
  info.schedule_name = in.string(sched, ps, "name");
  info.num_ranks = in.count(sched, ps, "num_ranks");
  info.num_stages = in.count(sched, ps, "num_stages");
  info.num_microbatches = in.count(sched, ps, "num_microbatches");
  const auto recompute = schedules::parse_recompute_policy(in.string(sched, ps, "recompute"));
  if (!recompute) in.fail(ps + ".recompute", "must be never, always or except_last");
  info.recompute = *recompute;
  const json& map = in.get(sched, ps, "stage_to_rank");
  if (!map.is_array() || map.size() != static_cast<std::size_t>(info.num_stages)) {
    in.fail(ps + ".stage_to_rank", "must be an array of num_stages ranks");
  }
  for (std::size_t s = 0; s < map.size(); ++s) {
    const auto path = fmt::format("{}.stage_to_rank[{}]", ps, s);
    info.stage_to_rank.emplace_back(
        static_cast<int>(in.integer_at(map[s], path, 0, info.num_ranks - 1)));
  }

  const json& source = in.object(g, p, "source");
  info.source = in.string(source, p + ".source", "kind");
  if (!is_timeline_source(info.source)) in.fail(p + ".source.kind", "must be sim, cpu, cuda or torch");
  if (const json* device = FieldReader::find(source, "device")) {
    info.device = in.string_at(*device, p + ".source.device");
  }
  // batch_size and static_bytes may be unknown: absent reads as 0 / empty.
  if (FieldReader::find(g, "batch_size") != nullptr) {
    info.batch_size = in.integer(g, p, "batch_size", 0);
  }
  if (const json* bytes = FieldReader::find(g, "static_bytes")) {
    if (!bytes->is_array() ||
        (!bytes->empty() && bytes->size() != static_cast<std::size_t>(info.num_ranks))) {
      in.fail(p + ".static_bytes", "must be an array with one entry per rank (or empty)");
    }
    for (std::size_t r = 0; r < bytes->size(); ++r) {
      const auto path = fmt::format("{}.static_bytes[{}]", p, r);
      info.static_bytes.push_back(in.integer_at((*bytes)[r], path, 0, kMaxBytes));
    }
  }
  if (FieldReader::find(g, "tensor_parallel") != nullptr) {  // absent from older traces: 1
    info.tensor_parallel = static_cast<int>(in.integer(g, p, "tensor_parallel", 1, 1 << 20));
  }
  return info;
}

// A complete event's [ts, ts + dur) in ns.
std::pair<std::int64_t, std::int64_t> read_interval(const json& ev, const std::string& where, const FieldReader& in) {
  const std::int64_t start = in.time_ns(ev, where, "ts");
  const std::int64_t duration = in.time_ns(ev, where, "dur");
  if (duration < 0) in.fail(where + ".dur", "must not be negative");
  return {start, start + duration};
}

void read_collective(const json& ev, const std::string& where, const FieldReader& in, Timeline& timeline) {
  CollectiveSpan c;
  c.collective = in.string(ev, where, "name");
  if (c.collective != "all-reduce" && c.collective != "all-gather" && c.collective != "reduce-scatter") {
    in.fail(where + ".name", "must be all-reduce, all-gather or reduce-scatter");
  }
  c.rank = schedules::Rank{static_cast<int>(in.integer(ev, where, "pid", 0, timeline.info.num_ranks - 1))};
  const json& args = in.object(ev, where, "args");
  const std::string within = in.string(args, where + ".args", "within");
  try {
    c.within = schedules::parse_action(within);
  } catch (const InputError& e) {
    in.fail(where + ".args.within", e.what());
  }
  if (stream_of(c.within.kind) != Stream::compute) in.fail(where + ".args.within", "must be a compute action");
  c.bytes = in.integer(args, where + ".args", "bytes", 0, kMaxBytes);
  std::tie(c.start_ns, c.end_ns) = read_interval(ev, where, in);
  timeline.collectives.push_back(std::move(c));
}

void read_action(const json& ev, const std::string& where, const FieldReader& in, int version,
                 Timeline& timeline) {
  TimedAction a;
  const std::string name = in.string(ev, where, "name");
  try {
    a.action = schedules::parse_action(name);
  } catch (const InputError& e) {
    in.fail(where + ".name", e.what());
  }
  a.rank = schedules::Rank{static_cast<int>(in.integer(ev, where, "pid", 0, timeline.info.num_ranks - 1))};
  const auto tid = static_cast<int>(in.integer(ev, where, "tid", version >= 2 ? 1 : 0, 1 << 20));
  a.stream = stream_of_lane(lane_of_tid(tid, version));
  // The backward of an overlapped pair may run beside its forward, on the
  // overlap lane; a stage's data-parallel reduction on the reduce lane.
  const bool overlapped = a.stream == Stream::overlap && is_input_backward(a.action.kind);
  const bool reduction = a.stream == Stream::reduce && a.action.kind == schedules::ActionKind::REDUCE_GRAD;
  if (a.stream != stream_of(a.action.kind) && !overlapped && !reduction) {
    in.fail(where + ".tid",
            fmt::format("is {} (a {} lane) but {} runs on the {} stream", tid, to_string(a.stream), name,
                        to_string(stream_of(a.action.kind))));
  }
  if (ev.at("cat") != std::string(category(a.stream))) {
    in.fail(where + ".cat", fmt::format("must be \"{}\" for {}", category(a.stream), name));
  }
  std::tie(a.start_ns, a.end_ns) = read_interval(ev, where, in);
  timeline.actions.push_back(a);
}

void read_memory(const json& ev, const std::string& where, const FieldReader& in,
                 Timeline& timeline) {
  MemorySample s;
  s.rank = schedules::Rank{static_cast<int>(in.integer(ev, where, "pid", 0, timeline.info.num_ranks - 1))};
  s.time_ns = in.time_ns(ev, where, "ts");
  s.activation_bytes = in.integer(in.object(ev, where, "args"), where + ".args", "bytes");
  timeline.memory.push_back(s);
}

}  // namespace

json to_chrome_trace(const Timeline& timeline) {
  json events = json::array();
  const std::vector<int> lanes = assign_lanes(timeline);
  const std::vector<int> collective_lanes = assign_collective_lanes(timeline);
  add_metadata(timeline.info, timeline, lanes, collective_lanes, events);
  for (std::size_t i = 0; i < lanes.size(); ++i) events.push_back(action_event(timeline.actions[i], lanes[i]));
  for (std::size_t i = 0; i < collective_lanes.size(); ++i) {
    events.push_back(collective_event(timeline.collectives[i], collective_lanes[i], timeline.info.tensor_parallel));
  }
  add_flows(timeline, lanes, events);
  for (const auto& s : timeline.memory) {
    events.push_back({{"name", kMemoryCounter},
                      {"ph", "C"},
                      {"pid", s.rank.value},
                      {"ts", to_us(s.time_ns)},
                      {"args", {{"bytes", s.activation_bytes}}}});
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData", {{"gpipe", gpipe_data(timeline)}}}};
}

void write_chrome_trace(const Timeline& timeline, const std::filesystem::path& path) {
  write_chrome_trace(to_chrome_trace(timeline), path);
}

void write_chrome_trace(const json& trace, const std::filesystem::path& path) {
  // One event per line: still one JSON document, but readable and diffable.
  constexpr auto kReplace = json::error_handler_t::replace;
  std::string text = "{\"traceEvents\": [\n";
  const json& events = trace.at("traceEvents");
  for (std::size_t i = 0; i < events.size(); ++i) {
    text += (i == 0 ? "" : ",\n") + events[i].dump(-1, ' ', false, kReplace);
  }
  text += "\n],\n\"displayTimeUnit\": \"ns\",\n\"otherData\": " +
          trace.at("otherData").dump(-1, ' ', false, kReplace) + "}\n";
  write_text_file(path, text);
}

Timeline timeline_from_chrome_trace(const json& trace, std::string_view origin) {
  const FieldReader in(origin);
  if (!trace.is_object()) throw InputError(fmt::format("{}: not a Chrome trace object", origin));
  const json& events = in.get(trace, "", "traceEvents");
  if (!events.is_array()) in.fail("traceEvents", "must be an array");
  Timeline timeline;
  timeline.info = read_info(trace, in);  // checks the version
  const auto version = trace.at("otherData").at("gpipe").at("version").get<int>();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string where = fmt::format("traceEvents[{}]", i);
    const json& ev = events[i];
    if (!ev.is_object()) in.fail(where, "must be an object");
    const json* ph = FieldReader::find(ev, "ph");
    if (ph == nullptr || !ph->is_string()) in.fail(where + ".ph", "must be a string");
    const json* cat = FieldReader::find(ev, "cat");
    const json* name = FieldReader::find(ev, "name");
    if (*ph == "X" && cat != nullptr && (*cat == "compute" || *cat == "comm")) {
      read_action(ev, where, in, version, timeline);
    } else if (*ph == "X" && cat != nullptr && *cat == kCollectiveCategory) {
      read_collective(ev, where, in, timeline);
    } else if (*ph == "C" && name != nullptr && *name == kMemoryCounter) {
      read_memory(ev, where, in, timeline);
    }
  }
  check_no_overlap(timeline, origin);
  return timeline;
}

Timeline read_chrome_trace(const std::filesystem::path& path) {
  return timeline_from_chrome_trace(read_json_file(path), path.string());
}

}  // namespace gpipe::timelines
