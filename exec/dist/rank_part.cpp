#include "exec/dist/rank_part.hpp"

#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace gpipe::exec {

using nlohmann::json;

std::string to_json(const RankPart& part) {
  json steps = json::array();
  for (const RankPart::Step& step : part.steps) {
    json intervals = json::array();
    for (const auto& [action, interval] : step.intervals) {
      intervals.push_back({to_string(action), interval.start_ns, interval.end_ns});
    }
    json reductions = json::array();
    for (const auto& [action, interval] : step.reductions) {
      reductions.push_back({to_string(action), interval.start_ns, interval.end_ns});
    }
    json collectives = json::array();
    for (const timelines::CollectiveSpan& c : step.collectives) {
      collectives.push_back({to_string(c.within), c.collective, c.bytes, c.start_ns, c.end_ns, to_string(c.group)});
    }
    json memory = json::array();
    for (const MemoryChange& c : step.memory) memory.push_back({c.action_index, c.host_ns, c.bytes});
    steps.push_back(
        {{"intervals", intervals}, {"reductions", reductions}, {"collectives", collectives}, {"memory", memory}});
  }
  return json{{"rank", part.rank.value}, {"static_bytes", part.static_bytes}, {"steps", steps}}.dump();
}

namespace {

timelines::CollectiveGroup group_of(const std::string& text) {
  const std::optional<timelines::CollectiveGroup> group = timelines::parse_collective_group(text);
  if (!group) throw InputError(fmt::format("a collective's group '{}' is neither tensor- nor context-parallel", text));
  return *group;
}

}  // namespace

RankPart parse_rank_part(const std::string& text) {
  try {
    const json j = json::parse(text);
    RankPart part;
    part.rank = schedules::Rank{j.at("rank").get<int>()};
    part.static_bytes = j.at("static_bytes").get<std::int64_t>();
    for (const json& s : j.at("steps")) {
      RankPart::Step& step = part.steps.emplace_back();
      for (const json& i : s.at("intervals")) {
        step.intervals.emplace_back(schedules::parse_action(i.at(0).get<std::string>()),
                                    Interval{i.at(1).get<std::int64_t>(), i.at(2).get<std::int64_t>()});
      }
      for (const json& i : s.value("reductions", json::array())) {
        step.reductions.emplace_back(schedules::parse_action(i.at(0).get<std::string>()),
                                     Interval{i.at(1).get<std::int64_t>(), i.at(2).get<std::int64_t>()});
      }
      for (const json& c : s.value("collectives", json::array())) {
        step.collectives.push_back({.rank = part.rank,
                                    .within = schedules::parse_action(c.at(0).get<std::string>()),
                                    .collective = c.at(1).get<std::string>(),
                                    .bytes = c.at(2).get<std::int64_t>(),
                                    .start_ns = c.at(3).get<std::int64_t>(),
                                    .end_ns = c.at(4).get<std::int64_t>(),
                                    .group = group_of(c.at(5).get<std::string>())});
      }
      for (const json& m : s.at("memory")) {
        step.memory.push_back({m.at(0).get<int>(), m.at(1).get<std::int64_t>(), m.at(2).get<std::int64_t>()});
      }
    }
    return part;
  } catch (const json::exception& e) {
    throw RunError(fmt::format("a rank's measured part does not parse: {}", e.what()));
  } catch (const InputError& e) {
    throw RunError(fmt::format("a rank's measured part does not parse: {}", e.what()));
  }
}

std::vector<RankPart> exchange_parts(TcpStore& store, const RankPart& mine, int ranks, schedules::Rank reporter,
                                     int replica, int replicas) {
  const auto key = [replica](int rank) {
    return replica == 0 ? fmt::format("gpipe/part{}", rank) : fmt::format("gpipe/replica{}/part{}", replica, rank);
  };
  store.set(key(mine.rank.value), to_json(mine));
  std::vector<RankPart> parts;
  if (mine.rank == reporter) {
    for (int r = 0; r < ranks; ++r) parts.push_back(parse_rank_part(store.get(key(r))));
  }
  // Rank 0 of replica 0 serves the store: it stays until every reporter has read every part.
  store.barrier("gpipe/done", replica * ranks + mine.rank.value, ranks * replicas);
  return parts;
}

}  // namespace gpipe::exec
