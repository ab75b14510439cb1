#include "tools/gpipe-run/launcher.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::tools {
namespace {

// One shell word: single-quoted, each ' written as '\''.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// This executable, so that the processes run the very same build.
std::string self_path() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw RunError("cannot find this gpipe-run's own path (/proc/self/exe) to launch it");
  return path.string();
}

}  // namespace

Launcher::Launcher(std::string text) : text_(std::move(text)) {
  if (text_.empty()) throw InputError("--launcher: give mpirun, or a command prefix with {K} (e.g. \"srun -n {K}\")");
  if (text_ != "mpirun" && text_.find("{K}") == std::string::npos) {
    throw InputError(fmt::format("--launcher '{}': a prefix must say where the process count goes, as {{K}} (e.g. "
                                 "\"srun -n {{K}}\"), or be mpirun",
                                 text_));
  }
}

std::string Launcher::prefix(int processes) const {
  if (text_ == "mpirun") {
    std::string words = fmt::format("mpirun -np {}", processes);
    if (processes > static_cast<int>(std::thread::hardware_concurrency())) words += " --oversubscribe";
    if (geteuid() == 0) words += " --allow-run-as-root";
    return words;
  }
  std::string words = text_;
  for (auto at = words.find("{K}"); at != std::string::npos; at = words.find("{K}")) {
    words.replace(at, 3, std::to_string(processes));
  }
  return words;
}

Launcher::Outcome Launcher::run(int processes, const std::vector<std::string>& args) const {
  Outcome outcome;
  outcome.command = prefix(processes) + " " + quoted(self_path());
  for (const std::string& a : args) outcome.command += " " + quoted(a);
  const auto scratch = std::filesystem::temp_directory_path() / fmt::format("gpipe-launch-{}", getpid());
  const auto out = scratch.string() + ".out";
  const auto err = scratch.string() + ".err";
  const int raw = std::system(fmt::format("{} >{} 2>{} </dev/null", outcome.command, quoted(out), quoted(err)).c_str());
  outcome.status = raw == -1 ? -1 : WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  outcome.out = read_all(out);
  outcome.err = read_all(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return outcome;
}

}  // namespace gpipe::tools
