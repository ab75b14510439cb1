#include "tools/common/seed_flag.hpp"

#include <charconv>
#include <system_error>

namespace gpipe::tools {

CLI::Option* add_seed_flag(CLI::App& cmd, std::uint64_t& seed, const std::string& help, const std::string& name) {
  return cmd.add_option(name, seed, help)
      ->check([](const std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size()) {
          return "a seed is an integer from 0 to 18446744073709551615, got " + text;
        }
        return "";
      })
      ->capture_default_str();
}

}  // namespace gpipe::tools
