// gpipe-run: the executor's command line. Train a model through a pipeline
// schedule on CPU threads and measure it, profile its layers for the
// simulator, and validate the simulator against real runs.
#include "exec/tool/gpipe_run.hpp"
#include "exec/tool/memory_policy.hpp"

int main(int argc, char** argv) {
  gpipe::cli::keep_freed_memory();  // before any thread: the same allocator state for every run
  return gpipe::cli::gpipe_run_main(argc, argv);
}
