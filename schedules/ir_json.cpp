#include "schedules/ir_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "schedules/overlap.hpp"

namespace gpipe::schedules {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(const json& doc, std::string_view origin) : doc_(doc), origin_(origin) {}

  [[nodiscard]] InputError error(std::string_view field, std::string_view why) const {
    return InputError(fmt::format("{}: {}: {}", origin_, field, why));
  }

  [[nodiscard]] const json& field(const char* name) const {
    auto it = doc_.find(name);
    if (it == doc_.end()) throw error(name, "missing");
    return *it;
  }

  [[nodiscard]] std::string string(const char* name) const {
    const json& v = field(name);
    if (!v.is_string()) throw error(name, "expected a string");
    return v.get<std::string>();
  }

  [[nodiscard]] int count(const char* name) const {
    const json& v = field(name);
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1'000'000) {
      throw error(name, "expected an integer from 1 to 1000000");
    }
    return v.get<int>();
  }

 private:
  const json& doc_;
  std::string_view origin_;
};

}  // namespace

json to_json(const Schedule& s) {
  json stage_to_rank = json::array();
  for (Rank r : s.stage_to_rank) stage_to_rank.push_back(r.value);
  json ranks = json::array();
  for (int r = 0; r < static_cast<int>(s.ranks.size()); ++r) ranks.push_back(cells_of(s, Rank{r}));
  json out{{"format", "gpipe-schedule"},
           {"version", 1},
           {"name", s.name},
           {"num_ranks", s.num_ranks},
           {"num_stages", s.num_stages},
           {"num_microbatches", s.num_microbatches},
           {"stage_to_rank", std::move(stage_to_rank)},
           {"recompute", std::string(to_string(s.recompute))},
           {"ranks", std::move(ranks)}};
  if (s.tied_embedding) out["tied_embedding"] = true;
  if (s.data_parallel != 1) out["data_parallel"] = s.data_parallel;
  return out;
}

Schedule schedule_from_json(const json& doc, std::string_view origin) {
  if (!doc.is_object()) throw InputError(fmt::format("{}: expected a JSON object", origin));
  const Reader in(doc, origin);
  if (in.string("format") != "gpipe-schedule") {
    throw in.error("format", "expected \"gpipe-schedule\"");
  }
  if (in.field("version") != 1) throw in.error("version", "unsupported (this tool reads version 1)");

  Schedule s;
  s.name = in.string("name");
  s.num_ranks = in.count("num_ranks");
  s.num_stages = in.count("num_stages");
  s.num_microbatches = in.count("num_microbatches");

  const std::string policy = in.string("recompute");
  const auto recompute = parse_recompute_policy(policy);
  if (!recompute) {
    throw in.error("recompute", fmt::format("unknown policy '{}' (never, always, except_last)", policy));
  }
  s.recompute = *recompute;
  if (doc.contains("tied_embedding")) {
    const json& tied = doc["tied_embedding"];
    if (!tied.is_boolean()) throw in.error("tied_embedding", "expected true or false");
    s.tied_embedding = tied.get<bool>();
  }
  if (doc.contains("data_parallel")) s.data_parallel = in.count("data_parallel");

  const json& map = in.field("stage_to_rank");
  if (!map.is_array()) throw in.error("stage_to_rank", "expected an array of ranks");
  for (std::size_t i = 0; i < map.size(); ++i) {
    if (!map[i].is_number_integer()) {
      throw in.error(fmt::format("stage_to_rank[{}]", i), "expected an integer rank");
    }
    s.stage_to_rank.emplace_back(map[i].get<int>());
  }

  const json& ranks = in.field("ranks");
  if (!ranks.is_array()) throw in.error("ranks", "expected an array with one action list per rank");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].is_array()) throw in.error(fmt::format("ranks[{}]", r), "expected an array of actions");
    auto& list = s.ranks.emplace_back();
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      const json& cell = ranks[r][i];
      const auto where = fmt::format("ranks[{}][{}]", r, i);
      if (!cell.is_string()) throw in.error(where, "expected an action string such as \"0F0\"");
      try {
        append_cell(cell.get<std::string>(), list, s.overlapped);
      } catch (const InputError& e) {
        throw in.error(where, e.what());
      }
    }
  }
  // Counts past the file's own size name stages and micro-batches that
  // cannot be there, and would size every later check by the number.
  const std::size_t actions = s.total_actions();
  if (static_cast<std::size_t>(s.num_stages) > std::max<std::size_t>(actions, 1)) {
    throw in.error("num_stages", fmt::format("{} stages in a file of {} actions: every stage needs at least one",
                                             s.num_stages, actions));
  }
  if (static_cast<std::size_t>(s.num_microbatches) > std::max<std::size_t>(actions, 1)) {
    throw in.error("num_microbatches", fmt::format("{} micro-batches in a file of {} actions: every micro-batch "
                                                   "needs at least one",
                                                   s.num_microbatches, actions));
  }
  return s;
}

}  // namespace gpipe::schedules

namespace gpipe::schedules {

std::string to_json_text(const Schedule& schedule) {
  const nlohmann::json doc = to_json(schedule);
  std::string out = "{";
  const char* keys[] = {"format", "version", "name", "num_ranks", "num_stages",
                        "num_microbatches", "stage_to_rank", "recompute"};
  for (const char* key : keys) out += fmt::format("\"{}\": {},\n ", key, doc[key].dump());
  if (schedule.tied_embedding) out += "\"tied_embedding\": true,\n ";
  if (schedule.data_parallel != 1) out += fmt::format("\"data_parallel\": {},\n ", schedule.data_parallel);
  out += "\"ranks\": [";
  const auto& ranks = doc["ranks"];
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    out += fmt::format("{}\n  {}", r == 0 ? "" : ",", ranks[r].dump());
  }
  out += "]}\n";
  return out;
}

}  // namespace gpipe::schedules
