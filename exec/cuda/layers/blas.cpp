#include "exec/cuda/layers/blas.hpp"

#include "exec/cuda/kernels/gemm.hpp"

namespace gpipe::exec::cuda::layers {

void BlasHandleDeleter::operator()(BlasHandle* handle) const { delete handle; }

OwnedBlasHandle make_blas_handle() { return OwnedBlasHandle(new BlasHandle()); }

}  // namespace gpipe::exec::cuda::layers
