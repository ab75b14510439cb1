#include "exec/dist/bootstrap.hpp"

#include <charconv>
#include <string>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

extern char** environ;  // POSIX

namespace gpipe::exec {

namespace {

std::optional<std::string> lookup(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

int parse_int(const std::string& name, const std::string& text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) {
    throw InputError("launch environment: " + name + "='" + text + "' is not an integer");
  }
  return value;
}

std::optional<int> int_var(const Environment& env, const std::string& name) {
  const auto text = lookup(env, name);
  if (!text) return std::nullopt;
  return parse_int(name, *text);
}

// One launcher's view: its variables' names and values.
struct View {
  std::string launcher;
  std::string rank_var, size_var, local_var;
  int rank = 0, size = 1;
  std::optional<int> local;
};

// The launcher's rank and size, if its rank variable or size variable is set.
std::optional<View> read_view(const Environment& env, std::string launcher, std::string rank_var,
                              std::string size_var, std::string local_var) {
  const auto rank = int_var(env, rank_var);
  const auto size = int_var(env, size_var);
  if (!rank && !size) return std::nullopt;
  if (!rank) throw InputError("launch environment: " + size_var + " is set but " + rank_var + " is missing");
  if (!size) throw InputError("launch environment: " + rank_var + " is set but " + size_var + " is missing");
  View v{std::move(launcher), rank_var, size_var, local_var, *rank, *size, int_var(env, local_var)};
  if (v.size < 1) {
    throw InputError("launch environment: " + size_var + "=" + std::to_string(v.size) + " must be at least 1");
  }
  if (v.rank < 0 || v.rank >= v.size) {
    throw InputError("launch environment: " + rank_var + "=" + std::to_string(v.rank) +
                     " is outside [0, " + size_var + "=" + std::to_string(v.size) + ")");
  }
  if (v.local && (*v.local < 0 || *v.local >= v.size)) {
    throw InputError("launch environment: " + local_var + "=" + std::to_string(*v.local) +
                     " is outside [0, " + size_var + "=" + std::to_string(v.size) + ")");
  }
  return v;
}

}  // namespace

LaunchInfo parse_launch_environment(const Environment& env, bool rendezvous) {
  std::vector<View> views;
  if (auto v = read_view(env, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK")) views.push_back(*v);
  if (auto v = read_view(env, "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK")) {
    views.push_back(*v);
  }
  if (auto v = read_view(env, "srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")) {
    views.push_back(*v);
  }
  LaunchInfo info;
  if (views.empty()) return info;  // no launcher: one process

  const View& first = views.front();
  for (const View& other : views) {
    if (other.rank != first.rank || other.size != first.size) {
      throw InputError("launch environment: " + first.rank_var + "=" + std::to_string(first.rank) +
                       ", " + first.size_var + "=" + std::to_string(first.size) + " contradict " +
                       other.rank_var + "=" + std::to_string(other.rank) + ", " + other.size_var +
                       "=" + std::to_string(other.size));
    }
  }
  info.launcher = first.launcher;
  info.rank = first.rank;
  info.world_size = first.size;
  info.local_rank = first.rank;  // one node unless a local rank is given
  for (const View& v : views) {
    if (v.local) {
      info.local_rank = *v.local;
      break;
    }
  }
  info.local_size = info.world_size;
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"}) {
    if (const auto local_size = int_var(env, name)) {
      if (*local_size < 1 || *local_size > info.world_size) {
        throw InputError(fmt::format("launch environment: {}={} is outside [1, {}]", name, *local_size,
                                     info.world_size));
      }
      info.local_size = *local_size;
      break;
    }
  }

  if (!rendezvous) return info;
  const auto addr = lookup(env, "MASTER_ADDR");
  const auto port = lookup(env, "MASTER_PORT");
  if (addr) {
    if (addr->empty()) throw InputError("launch environment: MASTER_ADDR is empty");
    info.master_addr = *addr;
  } else if (info.world_size > 1) {
    throw InputError("launch environment: MASTER_ADDR is missing (needed to rendezvous " +
                     std::to_string(info.world_size) + " processes launched by " + info.launcher + ")");
  }
  if (port) {
    info.master_port = parse_int("MASTER_PORT", *port);
    if (info.master_port < 1 || info.master_port > 65535) {
      throw InputError("launch environment: MASTER_PORT=" + *port + " is outside 1-65535");
    }
  } else if (info.world_size > 1) {
    throw InputError("launch environment: MASTER_PORT is missing (needed to rendezvous " +
                     std::to_string(info.world_size) + " processes launched by " + info.launcher + ")");
  }
  return info;
}

Environment current_environment() {
  Environment env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    const std::string entry(*p);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

}  // namespace gpipe::exec
