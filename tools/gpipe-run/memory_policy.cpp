#include "tools/gpipe-run/memory_policy.hpp"

#include <climits>  // also brings glibc's <features.h>, which defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gpipe::tools {

void keep_freed_memory() {
#if defined(__GLIBC__)
  // Each setting is best effort: a value glibc refuses leaves its default.
  (void)mallopt(M_TRIM_THRESHOLD, INT_MAX);   // never give the heap's top back
  (void)mallopt(M_TOP_PAD, 64 << 20);         // grow the heap in large steps
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: bigger blocks stay mmap'd
#endif
}

}  // namespace gpipe::tools
