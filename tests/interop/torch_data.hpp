// Where the torch importers' tests find the traces torch wrote (tests/data/torch/).
#pragma once

#include <filesystem>
#include <string>

namespace gpipe::interop::testing {

inline std::filesystem::path torch_data(const std::string& name) {
  return std::filesystem::path(GPIPE_TEST_DATA_DIR) / "torch" / name;
}

}  // namespace gpipe::interop::testing
