// Finding the GPU: how many devices this process can use, and one clear
// RunError when there is none ("no CUDA device: ..."), which gpipe-run turns
// into exit status 1 and GPU tests into GTEST_SKIP.
#pragma once

#include <string>

namespace gpipe::exec::cuda {

// The number of CUDA devices; 0 when there is no driver or no device (never throws).
[[nodiscard]] int device_count();
// Why there is no device, in words ("no CUDA driver: ..."), or "" when there is one.
[[nodiscard]] std::string no_device_reason();
// Throws RunError "no CUDA device: <reason>" unless a device is present.
void require_device();
// Makes `device` the calling thread's device unless it already is. Never
// cudaSetDevice unconditionally in a rank's thread: it also makes the device's
// primary context current, replacing the green context the thread is bound to
// (SmPartitions::bind_thread).
void use_device(int device);
// The compute capability's major number (9 on Hopper). Requires a device.
[[nodiscard]] int compute_capability_major(int device = 0);
// The device's name, e.g. "NVIDIA H100 80GB HBM3". Requires a device.
[[nodiscard]] std::string device_name(int device = 0);

}  // namespace gpipe::exec::cuda
