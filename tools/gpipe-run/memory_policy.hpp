// How gpipe-run's process treats memory it frees: it keeps it. By default
// glibc gives freed memory back to the kernel (trimming the heap, unmapping
// large blocks) and takes it again on the next allocation, page faults and
// zeroing included. A pipeline allocates and frees the same activation sizes
// over and over, so that churn lands inside the timed actions, and how much
// of it depends on the schedule (a pass that frees everything, as a K=1 M=1
// step or the profiler's pass, is trimmed; M stashes held at once are not):
// measured on a small transformer, a block's forward at b=2 took 410 us with
// the default policy against 330 us with this one, and the simulator's step
// time error on a validate grid fell from ~20 % to ~3 %. Keeping freed memory
// makes a layer cost the same in the profiler and in every schedule.
#pragma once

namespace gpipe::tools {

// Sets glibc's malloc to keep freed memory (mallopt: no trimming, 64 MB of top
// padding, blocks up to 32 MB from the heap rather than mmap). Call once at
// start, before any thread runs; a no-op where mallopt does not exist.
void keep_freed_memory();

}  // namespace gpipe::tools
