#include "schedules/schedule.hpp"

#include <algorithm>
#include <array>

namespace gpipe::schedules {
namespace {
constexpr std::array<std::string_view, 4> kPolicyNames = {"never", "stage", "stage_except_last", "full"};
// The names GPipe's stage-wide policies had until they were named for what they rebuild.
constexpr std::array<std::pair<std::string_view, RecomputePolicy>, 2> kFormerNames = {
    {{"always", RecomputePolicy::stage}, {"except_last", RecomputePolicy::stage_except_last}}};
}  // namespace

std::string_view to_string(RecomputePolicy policy) {
  return kPolicyNames[static_cast<std::size_t>(policy)];
}

std::optional<RecomputePolicy> parse_recompute_policy(std::string_view text) {
  for (std::size_t i = 0; i < kPolicyNames.size(); ++i) {
    if (kPolicyNames[i] == text) return static_cast<RecomputePolicy>(i);
  }
  for (const auto& [name, policy] : kFormerNames) {
    if (name == text) return policy;
  }
  return std::nullopt;
}

std::vector<std::string> recompute_policy_names() {
  return {kPolicyNames.begin(), kPolicyNames.end()};
}

std::vector<std::string> accepted_recompute_policy_names() {
  std::vector<std::string> names = recompute_policy_names();
  for (const auto& [name, policy] : kFormerNames) names.emplace_back(name);
  return names;
}

bool Schedule::is_lowered() const {
  for (const auto& list : ranks) {
    for (const auto& a : list) {
      if (is_comm(a.kind) || a.kind == ActionKind::R || a.kind == ActionKind::STEP) return true;
    }
  }
  return false;
}

bool Schedule::crosses_ranks(Stage s) const {
  return s.value + 1 < num_stages && rank_of(s) != rank_of(Stage{s.value + 1});
}

int Schedule::total_actions() const {
  int n = 0;
  for (const auto& list : ranks) n += static_cast<int>(list.size());
  return n;
}

std::vector<Rank> one_stage_per_rank(int num_stages) {
  std::vector<Rank> map;
  map.reserve(static_cast<std::size_t>(std::max(num_stages, 0)));
  for (int s = 0; s < num_stages; ++s) map.emplace_back(s);
  return map;
}

}  // namespace gpipe::schedules
