// gpipe-sim: print and check schedules; predict, sweep and diff pipeline runs.
#include "tools/gpipe-sim/gpipe_sim.hpp"

int main(int argc, char** argv) { return gpipe::tools::gpipe_sim_main(argc, argv); }
