// Fuzz target: gpipe-run's whole command line (train, profile, validate on the
// cpu backend), in process, within the work budget of tests/fuzz/argv_fuzz.hpp.
// The scratch folder holds the files of tests/fuzz/seed_files.hpp for flags to name.
#include <cstdint>

#include "tests/fuzz/argv_fuzz.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/seed_files.hpp"
#include "tools/gpipe-run/gpipe_run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpipe::fuzz::fuzz_argv("gpipe-run", gpipe::fuzz::text_of(data, size), gpipe::tools::gpipe_run_main,
                                gpipe::fuzz::write_seed_files);
}
