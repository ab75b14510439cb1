// A cuBLASLt handle for code that holds DeviceTensors and so cannot include
// exec/cuda/gemm.hpp (its kernel launch header names the raw stream handle
// `Stream`, as exec/cuda/stream.hpp names its class; see ops.hpp): the
// executor and the tests make the LayerContext's BlasHandle through this.
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
