// The registry: every backend gpipe-run knows, by name. In a build without
// the CUDA toolkit `cuda` is still a name, whose runs say that this build
// cannot make them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "exec/backend.hpp"

namespace gpipe::exec {

// The backend called `name`; InputError naming the known ones otherwise.
[[nodiscard]] const Backend& find_backend(std::string_view name);
// "cpu, cuda", for help texts and errors.
[[nodiscard]] std::vector<std::string> backend_names();

}  // namespace gpipe::exec
