#include "exec/cuda/base/check.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec::cuda {

void throw_cuda_error(const char* call, const char* file, int line, const std::string& what) {
  throw RunError(fmt::format("{} failed at {}:{}: {}", call, file, line, what));
}

}  // namespace gpipe::exec::cuda
