#include "schedules/ir_json.hpp"

#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "schedules/overlap.hpp"

namespace gpipe::schedules {
namespace {

using nlohmann::json;

// A schedule file's errors: "ORIGIN: num_ranks: expected an integer from 1 to 1000000".
constexpr JsonWording kScheduleWording{.missing = "missing"};

int count(const JsonField& at) {
  return static_cast<int>(at.integer(1, 1'000'000, "an integer from 1 to 1000000"));
}

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
  if (s.reduce_after_backward) out["reduce_after_backward"] = true;
  return out;
}

Schedule schedule_from_json(const json& doc, std::string_view origin) {
  const JsonField root(doc, origin, kScheduleWording);
  root.expect_object();
  const JsonField format = root.member("format");
  if (format.string() != "gpipe-schedule") format.fail("expected \"gpipe-schedule\"");
  const JsonField version = root.member("version");
  if (version.value() != 1) version.fail("unsupported (this tool reads version 1)");

  Schedule s;
  s.name = root.member("name").string();
  s.num_ranks = count(root.member("num_ranks"));
  s.num_stages = count(root.member("num_stages"));
  s.num_microbatches = count(root.member("num_microbatches"));

  const JsonField policy = root.member("recompute");
  const auto recompute = parse_recompute_policy(policy.string());
  if (!recompute) {
    policy.fail(fmt::format("unknown policy '{}' ({})", policy.string(), fmt::join(recompute_policy_names(), ", ")));
  }
  s.recompute = *recompute;
  if (const auto tied = root.optional_member("tied_embedding")) s.tied_embedding = tied->boolean();
  if (const auto replicas = root.optional_member("data_parallel")) s.data_parallel = count(*replicas);
  if (const auto after = root.optional_member("reduce_after_backward")) s.reduce_after_backward = after->boolean();

  const JsonField map = root.member("stage_to_rank");
  if (!map.value().is_array()) map.fail("expected an array of ranks");
  for (std::size_t i = 0; i < map.value().size(); ++i) {
    const auto rank = map.element(i).integer(std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                                             "an integer rank");
    s.stage_to_rank.emplace_back(static_cast<int>(rank));
  }

  const JsonField ranks = root.member("ranks");
  if (!ranks.value().is_array()) ranks.fail("expected an array with one action list per rank");
  for (std::size_t r = 0; r < ranks.value().size(); ++r) {
    const JsonField cells = ranks.element(r);
    if (!cells.value().is_array()) cells.fail("expected an array of actions");
    auto& list = s.ranks.emplace_back();
    for (std::size_t i = 0; i < cells.value().size(); ++i) {
      const JsonField cell = cells.element(i);
      if (!cell.value().is_string()) cell.fail("expected an action string such as \"0F0\"");
      try {
        append_cell(cell.string(), list, s.overlapped);
      } catch (const InputError& e) {
        cell.fail(e.what());
      }
    }
  }
  // Counts past the file's own size name stages and micro-batches that
  // cannot be there, and would size every later check by the number.
  const std::size_t actions = s.total_actions();
  if (static_cast<std::size_t>(s.num_stages) > std::max<std::size_t>(actions, 1)) {
    root.member("num_stages")
        .fail(fmt::format("{} stages in a file of {} actions: every stage needs at least one", s.num_stages, actions));
  }
  if (static_cast<std::size_t>(s.num_microbatches) > std::max<std::size_t>(actions, 1)) {
    root.member("num_microbatches")
        .fail(fmt::format("{} micro-batches in a file of {} actions: every micro-batch needs at least one",
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
  if (schedule.reduce_after_backward) out += "\"reduce_after_backward\": true,\n ";
  out += "\"ranks\": [";
  const auto& ranks = doc["ranks"];
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    out += fmt::format("{}\n  {}", r == 0 ? "" : ",", ranks[r].dump());
  }
  out += "]}\n";
  return out;
}

}  // namespace gpipe::schedules
