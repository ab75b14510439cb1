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
#include "base/json_fields.hpp"
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

// A collective names the action it ran in and its group: the tensor-parallel
// parts of the rank's stages, or the context-parallel members sharing its
// sequences ("over" says which; a trace without it is tensor-parallel).
json collective_event(const CollectiveSpan& c, int lane, const TimelineInfo& info) {
  const bool context = c.group == CollectiveGroup::context;
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
            {"over", to_string(c.group)},
            {"group", context ? fmt::format("the {} context-parallel members of rank {}", info.context_parallel,
                                            c.rank.value)
                              : fmt::format("the {} tensor-parallel parts of rank {}", info.tensor_parallel,
                                            c.rank.value)}}}};
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
          {"context_parallel", info.context_parallel},
          {"metrics", to_json(checked_metrics(timeline))}};
}

// A trace's errors: "ORIGIN: field 'traceEvents[12].ts' must be a number".
constexpr JsonWording kTraceWording{.form = JsonWording::Form::quoted, .field_word = "field "};

// A non-negative int, such as a count of ranks.
int non_negative_int(const JsonField& at) { return static_cast<int>(at.integer(0, std::numeric_limits<int>::max())); }

// A time in microseconds, as integer nanoseconds.
std::int64_t time_ns(const JsonField& at) {
  const double us = at.number();
  if (!std::isfinite(us) || std::abs(us) > kMaxAbsUs) at.fail("is out of range");
  return std::llround(us * 1000.0);
}

TimelineInfo read_info(const JsonField& trace) {
  const JsonField g = trace.member("otherData").member("gpipe");
  const JsonField format = g.member("format");
  if (format.string() != kFormat) format.fail(fmt::format("must be \"{}\"", kFormat));
  const JsonField version = g.member("version");
  const std::int64_t number = version.integer();
  if (number < kOldestVersion || number > kVersion) {
    version.fail(fmt::format("must be {} to {}", kOldestVersion, kVersion));
  }
  TimelineInfo info;
  const JsonField sched = g.member("schedule");
  info.schedule_name = sched.member("name").string();
  info.num_ranks = non_negative_int(sched.member("num_ranks"));
  info.num_stages = non_negative_int(sched.member("num_stages"));
  info.num_microbatches = non_negative_int(sched.member("num_microbatches"));
  const JsonField recompute_at = sched.member("recompute");
  const auto recompute = schedules::parse_recompute_policy(recompute_at.string());
  if (!recompute) recompute_at.fail("must be never, stage, stage_except_last or full");
  info.recompute = *recompute;
  const JsonField map = sched.member("stage_to_rank");
  if (!map.value().is_array() || map.value().size() != static_cast<std::size_t>(info.num_stages)) {
    map.fail("must be an array of num_stages ranks");
  }
  for (std::size_t s = 0; s < map.value().size(); ++s) {
    info.stage_to_rank.emplace_back(static_cast<int>(map.element(s).integer(0, info.num_ranks - 1)));
  }

  const JsonField source = g.member("source");
  const JsonField kind = source.member("kind");
  info.source = kind.string();
  if (!is_timeline_source(info.source)) kind.fail("must be sim, cpu, cuda or torch");
  if (const auto device = source.optional_member("device")) info.device = device->string();
  // batch_size and static_bytes may be unknown: absent reads as 0 / empty.
  if (const auto batch = g.optional_member("batch_size")) {
    info.batch_size = batch->integer(0, std::numeric_limits<std::int64_t>::max());
  }
  if (const auto bytes = g.optional_member("static_bytes")) {
    if (!bytes->value().is_array() ||
        (!bytes->value().empty() && bytes->value().size() != static_cast<std::size_t>(info.num_ranks))) {
      bytes->fail("must be an array with one entry per rank (or empty)");
    }
    for (std::size_t r = 0; r < bytes->value().size(); ++r) {
      info.static_bytes.push_back(bytes->element(r).integer(0, kMaxBytes));
    }
  }
  if (const auto tp = g.optional_member("tensor_parallel")) {  // absent from older traces: 1
    info.tensor_parallel = static_cast<int>(tp->integer(1, 1 << 20));
  }
  if (const auto cp = g.optional_member("context_parallel")) {  // absent from older traces: 1
    info.context_parallel = static_cast<int>(cp->integer(1, 1 << 20));
  }
  return info;
}

// A complete event's [ts, ts + dur) in ns.
std::pair<std::int64_t, std::int64_t> read_interval(const JsonField& ev) {
  const std::int64_t start = time_ns(ev.member("ts"));
  const JsonField dur = ev.member("dur");
  const std::int64_t duration = time_ns(dur);
  if (duration < 0) dur.fail("must not be negative");
  return {start, start + duration};
}

schedules::Rank read_rank(const JsonField& ev, const Timeline& timeline) {
  return schedules::Rank{static_cast<int>(ev.member("pid").integer(0, timeline.info.num_ranks - 1))};
}

void read_collective(const JsonField& ev, Timeline& timeline) {
  CollectiveSpan c;
  const JsonField name = ev.member("name");
  c.collective = name.string();
  if (c.collective != "all-reduce" && c.collective != "all-gather" && c.collective != "reduce-scatter") {
    name.fail("must be all-reduce, all-gather or reduce-scatter");
  }
  c.rank = read_rank(ev, timeline);
  const JsonField args = ev.member("args");
  args.expect_object();
  const JsonField within = args.member("within");
  try {
    c.within = schedules::parse_action(within.string());
  } catch (const InputError& e) {
    within.fail(e.what());
  }
  if (stream_of(c.within.kind) != Stream::compute) within.fail("must be a compute action");
  c.bytes = args.member("bytes").integer(0, kMaxBytes);
  if (const auto over = args.optional_member("over")) {  // absent from older traces: tensor-parallel
    const std::optional<CollectiveGroup> group = parse_collective_group(over->string());
    if (!group) over->fail("must be tensor-parallel or context-parallel");
    c.group = *group;
  }
  std::tie(c.start_ns, c.end_ns) = read_interval(ev);
  timeline.collectives.push_back(std::move(c));
}

void read_action(const JsonField& ev, int version, Timeline& timeline) {
  TimedAction a;
  const JsonField name_at = ev.member("name");
  const std::string& name = name_at.string();
  try {
    a.action = schedules::parse_action(name);
  } catch (const InputError& e) {
    name_at.fail(e.what());
  }
  a.rank = read_rank(ev, timeline);
  const JsonField tid_at = ev.member("tid");
  const auto tid = static_cast<int>(tid_at.integer(version >= 2 ? 1 : 0, 1 << 20));
  a.stream = stream_of_lane(lane_of_tid(tid, version));
  // The backward of an overlapped pair may run beside its forward, on the
  // overlap lane; a stage's data-parallel reduction on the reduce lane.
  const bool overlapped = a.stream == Stream::overlap && is_input_backward(a.action.kind);
  const bool reduction = a.stream == Stream::reduce && a.action.kind == schedules::ActionKind::REDUCE_GRAD;
  if (a.stream != stream_of(a.action.kind) && !overlapped && !reduction) {
    tid_at.fail(fmt::format("is {} (a {} lane) but {} runs on the {} stream", tid, to_string(a.stream), name,
                            to_string(stream_of(a.action.kind))));
  }
  const JsonField cat = ev.member("cat");
  if (cat.value() != std::string(category(a.stream))) {
    cat.fail(fmt::format("must be \"{}\" for {}", category(a.stream), name));
  }
  std::tie(a.start_ns, a.end_ns) = read_interval(ev);
  timeline.actions.push_back(a);
}

void read_memory(const JsonField& ev, Timeline& timeline) {
  MemorySample s;
  s.rank = read_rank(ev, timeline);
  s.time_ns = time_ns(ev.member("ts"));
  s.activation_bytes = ev.member("args").member("bytes").integer();
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
    events.push_back(collective_event(timeline.collectives[i], collective_lanes[i], timeline.info));
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
  const JsonField root(trace, origin, kTraceWording);
  if (!trace.is_object()) root.fail("not a Chrome trace object");
  const JsonField events = root.member("traceEvents");
  const std::size_t count = events.array_size();
  Timeline timeline;
  timeline.info = read_info(root);  // checks the version
  const auto version = trace.at("otherData").at("gpipe").at("version").get<int>();
  for (std::size_t i = 0; i < count; ++i) {
    const JsonField ev = events.element(i);
    ev.expect_object();
    const auto ph = ev.optional_member("ph");
    if (!ph || !ph->value().is_string()) ev.fail_member("ph", "must be a string");
    const auto cat = ev.optional_member("cat");
    const auto name = ev.optional_member("name");
    if (ph->value() == "X" && cat && (cat->value() == "compute" || cat->value() == "comm")) {
      read_action(ev, version, timeline);
    } else if (ph->value() == "X" && cat && cat->value() == kCollectiveCategory) {
      read_collective(ev, timeline);
    } else if (ph->value() == "C" && name && name->value() == kMemoryCounter) {
      read_memory(ev, timeline);
    }
  }
  check_no_overlap(timeline, origin);
  return timeline;
}

Timeline read_chrome_trace(const std::filesystem::path& path) {
  return timeline_from_chrome_trace(read_json_file(path), path.string());
}

}  // namespace gpipe::timelines
