#include "exec/cpu/device_name.hpp"

#include <fmt/format.h>

#include <fstream>
#include <string>


namespace gpipe::exec::cpu {

namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto first = line.find_first_not_of(" \t", colon + 1);
    const auto last = line.find_last_not_of(" \t\r");
    if (first == std::string::npos) continue;
    return line.substr(first, last - first + 1);
  }
  return "cpu";
}

}  // namespace

std::string device_name(int threads_per_rank) {
  static const std::string name = cpu_model_name();
  return threads_per_rank == 1 ? name : fmt::format("{}, {} threads per rank", name, threads_per_rank);
}

std::string processes_description(int processes, const std::string& launcher, int threads_per_rank,
                                  const std::string& cpu) {
  return fmt::format("one process per rank ({} processes, {}), MPI between ranks, {} on {}", processes, launcher,
                     threads_per_rank == 1 ? "one thread each" : fmt::format("{} threads each", threads_per_rank),
                     cpu);
}

}  // namespace gpipe::exec::cpu
