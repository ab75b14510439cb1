#include "exec/cuda/cupti/activity_record.hpp"

namespace gpipe::exec::cuda::cupti {

const char* to_string(MemcpyKind kind) {
  switch (kind) {
    case MemcpyKind::htod: return "HtoD";
    case MemcpyKind::dtoh: return "DtoH";
    case MemcpyKind::htoh: return "HtoH";
    case MemcpyKind::dtod: return "DtoD";
    case MemcpyKind::peer: return "PtoP";
    case MemcpyKind::other: return "other";
    case MemcpyKind::memset: return "Memset";
    case MemcpyKind::unknown: break;
  }
  return "unknown";
}

}  // namespace gpipe::exec::cuda::cupti
