// Fuzz target: gpipe-sim's whole command line, in process, within the work
// budget of tests/fuzz/argv_fuzz.hpp. The scratch folder holds a schedule
// (s.json, s.csv), a profile (p.json) and a trace (t.json) for flags to name.
#include <cstdint>

#include "tests/fuzz/argv_fuzz.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/seed_files.hpp"
#include "tools/gpipe-sim/gpipe_sim.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpipe::fuzz::fuzz_argv("gpipe-sim", gpipe::fuzz::text_of(data, size), gpipe::tools::gpipe_sim_main,
                                gpipe::fuzz::write_seed_files);
}
