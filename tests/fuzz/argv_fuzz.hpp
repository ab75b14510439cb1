// The argv-level fuzz targets (one per tool): the input is the command line
// after the program's name, one argument per line, run in process through the
// tool's own main function (tools/common/cli_main.hpp). Every exit status is fine (0,
// 1 for a failed run, 2 for bad input); a crash, a sanitizer report, an
// exception that escapes, a timeout or memory past the limit is a finding.
//
// The work budget keeps each input cheap, since a fuzzer must run thousands:
// an input is run only when every run of digits in it is one digit long (so
// K, M, layers, steps and sizes stay below 10; large numbers are fuzzed by
// the parser targets), it has no range (`..`) and at most four commas (so a
// grid holds a few configurations), no `/` (every file is in a scratch
// folder, which is emptied of what the last input wrote), and no
// `--launcher` (which would start other processes). Other inputs return -1,
// which keeps them out of the corpus.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace gpipe::fuzz {

inline bool within_work_budget(std::string_view input) {
  if (input.find('/') != std::string_view::npos || input.find("..") != std::string_view::npos ||
      input.find("launcher") != std::string_view::npos || input.find('\0') != std::string_view::npos) {
    return false;
  }
  if (std::count(input.begin(), input.end(), ',') > 4) return false;
  for (std::size_t i = 0; i + 1 < input.size(); ++i) {
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (digit(input[i]) && digit(input[i + 1])) return false;
  }
  return true;
}

// A scratch folder, made the working directory once, holding the files the
// seeds name (made by `prepare` with the tool itself); what an input writes
// besides them is removed before the next.
class ScratchFolder {
 public:
  template <typename Prepare>
  explicit ScratchFolder(Prepare&& prepare) {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpipe-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr || chdir(pattern.c_str()) != 0) std::abort();
    path_ = pattern;
    prepare();
    for (const auto& entry : std::filesystem::directory_iterator(path_)) kept_.push_back(entry.path());
  }

  void remove_what_inputs_wrote() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
      if (std::find(kept_.begin(), kept_.end(), entry.path()) == kept_.end()) {
        std::filesystem::remove_all(entry.path(), ec);
      }
    }
  }

 private:
  std::filesystem::path path_;
  std::vector<std::filesystem::path> kept_;
};

// Runs `tool_main` on "PROGRAM ARG1 ARG2 ..." with the input's lines as arguments.
template <typename ToolMain>
int run_argv(std::string_view program, std::string_view input, ToolMain&& tool_main) {
  std::vector<std::string> args{std::string(program)};
  std::size_t start = 0;
  while (start <= input.size() && !input.empty()) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    args.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return tool_main(static_cast<int>(args.size()), argv.data());
}

// One input of an argv-level target: within the budget, run in the scratch
// folder (made once, with `write_seed_files`), and what it wrote removed.
template <typename ToolMain, typename WriteSeedFiles>
int fuzz_argv(std::string_view program, std::string_view input, ToolMain&& tool_main,
              WriteSeedFiles&& write_seed_files) {
  if (!within_work_budget(input)) return -1;
  static const ScratchFolder folder(write_seed_files);
  (void)run_argv(program, input, tool_main);
  folder.remove_what_inputs_wrote();
  return 0;
}

}  // namespace gpipe::fuzz
