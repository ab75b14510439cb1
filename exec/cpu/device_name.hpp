// The name of this machine's CPU, for the timeline's and the profile's
// `device` field.
#pragma once

#include <string>

namespace gpipe::exec::cpu {

// The "model name" line of /proc/cpuinfo; "cpu" when unknown.
[[nodiscard]] std::string device_name();

}  // namespace gpipe::exec::cpu
