// The profiles shipped in profiles/data/, found by name, so that `gpipe-sim run`
// and `sweep` work with no profile argument at all and every --profile flag
// (gpipe-sim and gpipe-run alike) takes a shipped name as well as a path.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::profiles {

// The folder of shipped profiles: $GPIPE_PROFILE_DIR if set, else the source tree's profiles/data.
[[nodiscard]] std::filesystem::path shipped_profile_dir();

// The stems of the shipped profiles, sorted ("transformer-48L-h2048-h100", ...).
[[nodiscard]] std::vector<std::string> shipped_profile_names();

// The profile used when --profile is not given.
inline constexpr std::string_view kDefaultProfile = "transformer-48L-h2048-h100";

// A path as given when it names a file; otherwise a shipped profile's stem.
// Throws InputError("--profile X: no such file, and no shipped profile of that name (shipped: ...)").
[[nodiscard]] std::filesystem::path resolve_profile(std::string_view name_or_path);

}  // namespace gpipe::profiles
