// gpipe-sim: print and check schedules; predict, sweep and diff pipeline runs.
#include "sim/tool/gpipe_sim.hpp"

int main(int argc, char** argv) { return gpipe::cli::gpipe_sim_main(argc, argv); }
