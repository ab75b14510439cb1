// gpipe-run: the executor's command line. Train a model through a pipeline
// schedule on CPU threads and measure it, profile its layers for the
// simulator, and validate the simulator against real runs.
#include "tools/gpipe-run/gpipe_run.hpp"
#include "tools/gpipe-run/memory_policy.hpp"

int main(int argc, char** argv) {
  gpipe::tools::keep_freed_memory();  // before any thread: the same allocator state for every run
  return gpipe::tools::gpipe_run_main(argc, argv);
}
