// --seed, as both tools take it: an unsigned 64-bit integer, refused (not
// wrapped or clamped, as a plain integer option would) when negative or
// past 2^64 - 1.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace gpipe::tools {

// Adds --seed (or `name`) to `cmd`, stored in `seed`.
CLI::Option* add_seed_flag(CLI::App& cmd, std::uint64_t& seed, const std::string& help,
                           const std::string& name = "--seed");

}  // namespace gpipe::tools
