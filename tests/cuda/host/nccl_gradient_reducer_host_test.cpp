// The NCCL gradient reducer's checks that come before any device or peer is
// touched: a rank outside the group and a malformed id are one InputError
// each, on any machine. Reducing itself needs several GPUs.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "exec/cuda/nccl/nccl_gradient_reducer.hpp"

namespace gpipe::exec::cuda {
namespace {

std::string reducer_construction_error(int rank, int size, const std::string& id) {
  try {
    NcclGradientReducer reducer(rank, size, 0, id, nullptr, 25'000'000);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(NcclGradientReducerHost, ARankOutsideTheGroupIsRefused) {
  const std::string id(NCCL_UNIQUE_ID_BYTES, '\0');
  EXPECT_EQ(reducer_construction_error(2, 2, id), "NCCL gradient reducer: rank 2 is outside [0, 2)");
  EXPECT_EQ(reducer_construction_error(-1, 2, id), "NCCL gradient reducer: rank -1 is outside [0, 2)");
}

TEST(NcclGradientReducerHost, AMalformedIdIsRefused) {
  EXPECT_EQ(reducer_construction_error(0, 2, "short"),
            "NCCL gradient reducer: the shared id has 5 bytes, expected " + std::to_string(NCCL_UNIQUE_ID_BYTES));
}

}  // namespace
}  // namespace gpipe::exec::cuda
