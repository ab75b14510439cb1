#include "exec/cpu/ops/simd_level.hpp"

#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

#ifdef GPIPE_HAVE_VECTOR_CLONES
namespace {
// Function multiversioning: one definition per target, dispatched as the
// kernels' target_clones are. The dispatch is made where a call sees every
// version, so the callers of simd_level() reach it through the call below.
__attribute__((target("default"))) int level() { return 0; }
__attribute__((target("arch=x86-64-v3"))) int level() { return 3; }
__attribute__((target("arch=x86-64-v4"))) int level() { return 4; }
}  // namespace

int simd_level() { return level(); }
#else
int simd_level() { return 0; }
#endif

}  // namespace gpipe::exec::cpu
