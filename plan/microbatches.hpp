// How a mini-batch is cut into micro-batches (docs/design.md "Terms"): N samples
// into M micro-batches as torch.tensor_split does, or M micro-batches of
// exactly b. The simulator, the executor and the profiler all size their
// micro-batches here, so that a prediction and a run split alike; M >= 1 and
// M <= N are checked here and nowhere else.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gpipe::plan {

// Splits N samples into M micro-batches: sizes differ by at most one, the
// larger first (10 into 4 is 3,3,2,2). Throws InputError naming --microbatches
// when M < 1 or M > N.
[[nodiscard]] std::vector<int> split_batch(std::int64_t batch, int microbatches);

// The micro-batch sizes of a request: split_batch(batch, M) when batch > 0,
// else M micro-batches of micro_batch_size. Throws InputError when neither N
// nor b is given ("give --batch N or --micro-batch-size b") or M < 1.
[[nodiscard]] std::vector<int> microbatch_sizes(int microbatches, std::int64_t batch,
                                                int micro_batch_size);

// The distinct values of `sizes`, ascending: the micro-batch sizes a profile
// needs samples at to cost these micro-batches.
[[nodiscard]] std::vector<int> distinct_sizes(std::span<const int> sizes);

// The distinct micro-batch sizes that splitting `batch` into each M of
// `microbatches` gives, ascending; an M outside [1, batch] adds none (its row
// of a grid is skipped, not profiled).
[[nodiscard]] std::vector<int> microbatch_sizes_needed(std::int64_t batch,
                                                       std::span<const int> microbatches);

}  // namespace gpipe::plan
