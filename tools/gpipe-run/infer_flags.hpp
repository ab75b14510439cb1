// gpipe-run infer's flags: the model and its stages, the items and how they
// arrive, the partition, the seeds, the backends' and what the run writes.
// `gpipe-run validate --workload inference` fills them in to serve a
// configuration as processes, and args() is its command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/gpipe-run/backend_flags.hpp"

namespace gpipe::tools {

struct InferFlags {
  std::string backend = "cpu";
  std::string model;
  int stages = 0;
  int micro_batch_size = 1;
  int requests = 256;
  std::optional<int> in_flight;
  std::optional<double> arrival_interval_us;
  std::optional<double> arrival_rate;
  std::uint64_t arrival_seed = 1;
  std::string partition = "balanced";
  std::string profile;
  std::uint64_t seed = 1;
  int warmup = 2;
  CpuFlags cpu;
  CudaFlags cuda;
  std::string trace;
  bool json = false;

  void add_to(CLI::App& cmd);
  // `gpipe-run infer` and these flags: what makes these values again.
  [[nodiscard]] std::vector<std::string> args() const;
};

}  // namespace gpipe::tools
