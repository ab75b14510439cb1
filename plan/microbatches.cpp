#include "plan/microbatches.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::plan {
namespace {

void check_count(int microbatches) {
  if (microbatches < 1) throw InputError(fmt::format("--microbatches must be at least 1, got {}", microbatches));
}

}  // namespace

std::vector<int> split_batch(std::int64_t batch, int microbatches) {
  check_count(microbatches);
  if (batch < microbatches) {
    throw InputError(fmt::format("--microbatches {} exceeds --batch {}: every micro-batch needs a sample",
                                 microbatches, batch));
  }
  std::vector<int> sizes(static_cast<std::size_t>(microbatches),
                         static_cast<int>(batch / microbatches));
  for (std::int64_t i = 0; i < batch % microbatches; ++i) ++sizes[static_cast<std::size_t>(i)];
  return sizes;
}

std::vector<int> microbatch_sizes(int microbatches, std::int64_t batch, int micro_batch_size) {
  if (batch > 0) return split_batch(batch, microbatches);
  if (micro_batch_size < 1) throw InputError("give --batch N or --micro-batch-size b");
  check_count(microbatches);
  return std::vector<int>(static_cast<std::size_t>(microbatches), micro_batch_size);
}

std::vector<int> distinct_sizes(std::span<const int> sizes) {
  std::vector<int> out(sizes.begin(), sizes.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> microbatch_sizes_needed(std::int64_t batch, std::span<const int> microbatches) {
  std::vector<int> sizes;
  for (const int m : microbatches) {
    if (m < 1 || m > batch) continue;
    const std::vector<int> split = split_batch(batch, m);
    sizes.push_back(split.front());  // a split holds at most two sizes: its first and last
    sizes.push_back(split.back());
  }
  return distinct_sizes(sizes);
}

}  // namespace gpipe::plan
