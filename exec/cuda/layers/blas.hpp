// A cuBLASLt handle behind a unique_ptr, for code that holds a LayerContext
// (the executor, the tests) without including exec/cuda/kernels/gemm.hpp.
#pragma once

#include <memory>

namespace gpipe::exec::cuda {

class BlasHandle;

namespace layers {

struct BlasHandleDeleter {
  void operator()(BlasHandle* handle) const;
};
using OwnedBlasHandle = std::unique_ptr<BlasHandle, BlasHandleDeleter>;

// A handle with BlasHandle's default workspace (device memory: needs a GPU).
[[nodiscard]] OwnedBlasHandle make_blas_handle();

}  // namespace layers
}  // namespace gpipe::exec::cuda
