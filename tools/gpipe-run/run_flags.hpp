// The flags `gpipe-run train` and `gpipe-run validate` share: the backend, the
// model, how it is split and balanced, the optimizer, seeds and the watchdog
// (tools/gpipe-run/backend_flags.hpp has the CUDA flags and where a run goes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "exec/runtime/optimizer_config.hpp"
#include "tools/common/path_flag.hpp"  // check_writable, for the commands that include this
#include "tools/common/seed_flag.hpp"

namespace gpipe::tools {

struct RunFlags {
  std::string backend = "cpu";
  std::string model;
  std::string backward_order = "reverse";
  std::string partition = "balanced";
  std::string profile;  // costs to balance on (and, for validate, to predict with)
  std::uint64_t seed = 1;
  std::string optimizer = "adamw";
  float learning_rate = 1e-3F;
  double watchdog_seconds = 60.0;

  // `profile_help` says what --profile is for in this command.
  void add_to(CLI::App& cmd, const std::string& profile_help);
  // The flags that make these values again (--backward-order only
  // `with_backward_order`: a schedule file refuses it).
  [[nodiscard]] std::vector<std::string> args(bool with_backward_order = true) const;
  // The optimizer, with --lr; InputError for a learning rate that is not positive.
  [[nodiscard]] exec::OptimizerConfig optimizer_config() const;
};

// Adds --backend cpu|cuda to `cmd`, stored in `backend`.
void add_backend_flag(CLI::App& cmd, std::string& backend);

}  // namespace gpipe::tools
