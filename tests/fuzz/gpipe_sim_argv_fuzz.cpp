// Fuzz target: gpipe-sim's whole command line, in process, within the work
// budget of tests/fuzz/argv_fuzz.hpp. The scratch folder holds a schedule
// (s.json, s.csv), a profile (p.json) and a trace (t.json) for flags to name.
#include <cstdint>

#include "sim/tool/commands.hpp"
#include "tests/fuzz/argv_fuzz.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/seed_files.hpp"

namespace {

const gpipe::fuzz::ScratchFolder& scratch() {
  static const gpipe::fuzz::ScratchFolder folder(gpipe::fuzz::write_seed_files);
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = gpipe::fuzz::text_of(data, size);
  if (!gpipe::fuzz::within_work_budget(input)) return -1;
  const auto& folder = scratch();
  (void)gpipe::fuzz::run_argv("gpipe-sim", input, gpipe::cli::gpipe_sim_main);
  folder.remove_what_inputs_wrote();
  return 0;
}
