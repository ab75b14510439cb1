#include "exec/profiling/profile_assembly.hpp"

#include <utility>

namespace gpipe::exec {

profiles::Profile profile_header(const models::Model& model, std::string device, std::string source) {
  profiles::Profile profile;
  profile.device = std::move(device);
  profile.source = std::move(source);
  profile.dtype = std::string(models::to_string(models::DType::fp32));
  profile.model = model.spec;
  return profile;
}

}  // namespace gpipe::exec
