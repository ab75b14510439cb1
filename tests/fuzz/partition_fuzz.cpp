// Fuzz target: --partition and the partitioner. The first byte picks K (1..16);
// the text up to the first newline is the spec (balanced, uniform, 4,4,8);
// every 8 bytes after it are one layer's cost in ns, any int64, negative and
// huge included, as a hostile profile could make them.
#include <cstring>
#include <vector>

#include "models/partition.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int stages = 1 + data[0] % 16;
  const std::string_view rest = gpipe::fuzz::text_of(data + 1, size - 1);
  const std::size_t newline = rest.find('\n');
  const std::string_view spec = rest.substr(0, newline);
  std::vector<std::int64_t> costs;
  if (newline != std::string_view::npos) {
    const std::string_view bytes = rest.substr(newline + 1);
    for (std::size_t i = 0; i + 8 <= bytes.size() && costs.size() < 512; i += 8) {
      std::int64_t cost = 0;
      std::memcpy(&cost, bytes.data() + i, 8);
      costs.push_back(cost);
    }
  }
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto parsed = gpipe::models::parse_partition_spec(spec);
    (void)gpipe::models::make_partition(parsed, costs, stages);
  });
  return 0;
}
