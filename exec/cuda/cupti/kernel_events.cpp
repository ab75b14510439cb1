#include "exec/cuda/cupti/kernel_events.hpp"

#include "timelines/timeline.hpp"

#include <optional>
#include <set>
#include <string>
#include <utility>

namespace gpipe::exec::cuda::cupti {

using nlohmann::json;

namespace {

// The action that claims a correlation id, if any.
struct Owner {
  std::optional<std::uint64_t> external_id;
  const ActionRef* action = nullptr;
};

class Attribution {
 public:
  Attribution(const ActivityRecords& records, const ExternalIdMap& actions)
      : external_of_(correlation_to_external(records)), actions_(actions) {}

  [[nodiscard]] Owner owner(std::uint32_t correlation) const {
    Owner o;
    const auto e = external_of_.find(correlation);
    if (e == external_of_.end()) return o;
    o.external_id = e->second;
    if (const auto a = actions_.find(e->second); a != actions_.end()) o.action = &a->second;
    return o;
  }

 private:
  std::map<std::uint32_t, std::uint64_t> external_of_;
  const ExternalIdMap& actions_;
};

// Fills pid and the attribution args; records (pid, tid) for the "M" events.
void place(json& event, const Owner& owner, std::uint32_t device, std::uint32_t stream,
           std::set<std::pair<int, int>>& threads, std::set<std::uint32_t>& unattributed) {
  const int tid = kStreamTidBase + static_cast<int>(stream);
  int pid = 0;
  if (owner.action != nullptr) {
    pid = owner.action->rank.value;
    event["args"]["action"] = schedules::to_string(owner.action->action);
  } else {
    pid = kUnattributedPidBase + static_cast<int>(device);
    unattributed.insert(device);
  }
  if (owner.external_id) event["args"]["external id"] = *owner.external_id;
  event["pid"] = pid;
  event["tid"] = tid;
  threads.emplace(pid, tid);
}

}  // namespace

json gpu_trace_events(const ActivityRecords& records, const ExternalIdMap& actions,
                      std::int64_t origin_ns) {
  const Attribution attribution(records, actions);
  std::set<std::pair<int, int>> threads;
  std::set<std::uint32_t> unattributed;
  json events = json::array();
  for (const auto& k : records.kernels) {
    json e = {{"ph", "X"},
              {"cat", "kernel"},
              {"name", k.name},
              {"ts", timelines::to_us(k.start_ns - origin_ns)},
              {"dur", timelines::to_us(k.end_ns - k.start_ns)},
              {"args", {{"device", k.device}, {"stream", k.stream}, {"correlation", k.correlation}}}};
    place(e, attribution.owner(k.correlation), k.device, k.stream, threads, unattributed);
    events.push_back(std::move(e));
  }
  for (const auto& m : records.memcpys) {
    json e = {{"ph", "X"},
              {"cat", m.kind == MemcpyKind::memset ? "gpu_memset" : "gpu_memcpy"},
              {"name", m.kind == MemcpyKind::memset ? std::string("Memset")
                                                    : std::string("Memcpy ") + to_string(m.kind)},
              {"ts", timelines::to_us(m.start_ns - origin_ns)},
              {"dur", timelines::to_us(m.end_ns - m.start_ns)},
              {"args",
               {{"device", m.device},
                {"stream", m.stream},
                {"correlation", m.correlation},
                {"bytes", m.bytes}}}};
    place(e, attribution.owner(m.correlation), m.device, m.stream, threads, unattributed);
    events.push_back(std::move(e));
  }
  for (const auto& [pid, tid] : threads) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", "cuda stream " + std::to_string(tid - kStreamTidBase)}}}});
  }
  for (const std::uint32_t device : unattributed) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", kUnattributedPidBase + static_cast<int>(device)},
                      {"args", {{"name", "GPU " + std::to_string(device) + " (no action)"}}}});
  }
  return events;
}

void append_gpu_events(json& trace, const ActivityRecords& records, const ExternalIdMap& actions,
                       std::int64_t origin_ns) {
  for (auto& e : gpu_trace_events(records, actions, origin_ns)) {
    trace["traceEvents"].push_back(std::move(e));
  }
  const GpuTimeline counts = build_gpu_timeline(records, actions, origin_ns);
  trace["otherData"]["gpipe"]["gpu_records"] = {
      {"kernels", records.kernels.size()},
      {"memcpys", records.memcpys.size()},
      {"unmatched", counts.unmatched_records + counts.unknown_external_records},
      {"dropped", records.dropped}};
}

}  // namespace gpipe::exec::cuda::cupti
