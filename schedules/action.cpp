#include "schedules/action.hpp"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::schedules {
namespace {

constexpr std::array<std::string_view, kNumActionKinds> kKindNames = {
    "F", "B", "I", "W", "R", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "STEP",
    "WAIT_SEND_F", "WAIT_SEND_B", "UNSHARD", "RESHARD", "REDUCE_GRAD", "WAIT_REDUCE_GRAD"};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads a non-negative decimal at the front of `text`; nullopt if none or too large.
std::optional<int> take_number(std::string_view& text) {
  std::size_t n = 0;
  while (n < text.size() && is_digit(text[n])) ++n;
  if (n == 0) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + n, value);
  if (ec != std::errc{} || end != text.data() + n) return std::nullopt;
  text.remove_prefix(n);
  return value;
}

}  // namespace

std::string_view to_string(ActionKind kind) { return kKindNames[static_cast<std::size_t>(kind)]; }

std::optional<ActionKind> parse_action_kind(std::string_view text) {
  if (text == "BW") return ActionKind::B;  // the full backward's older spelling in torch's files
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == text) return static_cast<ActionKind>(i);
  }
  return std::nullopt;
}

std::string to_string(const Action& action) {
  if (is_stage_level(action.kind)) return fmt::format("{}{}", action.stage.value, to_string(action.kind));
  return fmt::format("{}{}{}", action.stage.value, to_string(action.kind), action.microbatch.value);
}

Action parse_action(std::string_view text) {
  auto fail = [&](std::string_view why) {
    return InputError(fmt::format("bad action '{}': {} (expected <stage><KIND><microbatch>, "
                                  "e.g. 2F0, 0SEND_F3, 0STEP)",
                                  text, why));
  };
  std::string_view rest = text;
  if (rest.starts_with('-')) throw fail("the stage is negative");
  const auto stage = take_number(rest);
  if (!stage) throw fail("no stage number");
  std::size_t n = 0;
  while (n < rest.size() && !is_digit(rest[n]) && rest[n] != '-') ++n;
  const auto kind = parse_action_kind(rest.substr(0, n));
  if (!kind) throw fail(fmt::format("unknown kind '{}'", rest.substr(0, n)));
  rest.remove_prefix(n);
  if (is_stage_level(*kind)) {
    if (!rest.empty()) throw fail(fmt::format("{} takes no micro-batch", to_string(*kind)));
    return Action{Stage{*stage}, *kind, Microbatch{0}};
  }
  if (rest.starts_with('-')) throw fail("the micro-batch is negative");
  const auto microbatch = take_number(rest);
  if (!microbatch) throw fail("no micro-batch number");
  if (!rest.empty()) throw fail(fmt::format("trailing '{}'", rest));
  return Action{Stage{*stage}, *kind, Microbatch{*microbatch}};
}

}  // namespace gpipe::schedules
