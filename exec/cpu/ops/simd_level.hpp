// Which build of the SIMD kernels (GPIPE_VECTOR_CLONES, vector_math.hpp) this
// CPU runs, chosen by the same load-time dispatch as theirs: a test checks it
// against the CPU's features, so that a clone the CPU could run is not passed
// over (as "arch=haswell" was on AMD: dispatched by CPU model, it ran the
// baseline on an AVX-512 machine).
#pragma once

namespace gpipe::exec::cpu {

// 4: x86-64-v4 (AVX-512); 3: x86-64-v3 (AVX2, FMA); 0: the baseline, and every
// build without clones (other architectures, sanitizers).
[[nodiscard]] int simd_level();

}  // namespace gpipe::exec::cpu
