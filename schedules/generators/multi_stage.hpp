// Generators of the families that put several stages on a rank (V =
// ScheduleOptions::stages_per_rank, --stages-per-rank), each the
// compute order of PyTorch 2.15's torch.distributed.pipelining schedule of
// the same name, rank by rank (tests/interop/torch_conformance_test.cpp
// holds them to torch's own listings). Each family's file draws its table.
//
// | name             | torch                 | V          | placement     | torch refuses          |
// | ---------------- | --------------------- | ---------- | ------------- | ---------------------- |
// | interleaved-1f1b | Interleaved1F1B       | >= 2 (2)   | s on s mod K  | M % max(1, M/K) != 0   |
// | looped-bfs       | LoopedBFS             | >= 2 (2)   | s on s mod K  | -                      |
// | interleaved-zb   | InterleavedZeroBubble | >= 2 (2)   | s on s mod K  | M % max(1, M/K) != 0   |
// | zbv              | ZBVZeroBubble         | 2          | V: r, 2K-1-r  | -                      |
// | dualpipev        | DualPipeV             | 2          | V: r, 2K-1-r  | M < 2K                 |
#pragma once

#include "schedules/generate.hpp"

namespace gpipe::schedules {

// Megatron's interleaved 1F1B (Narayanan et al. 2021), depth first.
[[nodiscard]] Schedule generate_interleaved_1f1b(const ScheduleOptions& options);
// Breadth-first pipelining (Lamy-Poirier 2022): all micro-batches through a stage, then the next.
[[nodiscard]] Schedule generate_looped_bfs(const ScheduleOptions& options);
// Interleaved 1F1B with split backwards, W filling the bubbles (the zero-bubble paper's ZB1P).
[[nodiscard]] Schedule generate_interleaved_zb(const ScheduleOptions& options);
// The zero-bubble paper's ZB-V (Qi et al. 2024, Section 6): two stages per rank in a V.
[[nodiscard]] Schedule generate_zbv(const ScheduleOptions& options);
// DeepSeek's DualPipeV: V-shaped, a forward of one stage overlapped with a
// backward of the other (Schedule::overlapped).
[[nodiscard]] Schedule generate_dualpipev(const ScheduleOptions& options);

}  // namespace gpipe::schedules
