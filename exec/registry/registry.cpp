// The one place where whether this build has the CUDA backend is a
// compile-time switch.
#include "exec/registry/registry.hpp"

#include <array>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "exec/registry/cpu_entry.hpp"

#ifdef GPIPE_HAVE_CUDA
#include "exec/cuda/backend/cuda_backend.hpp"
#endif

namespace gpipe::exec {

namespace {

#ifndef GPIPE_HAVE_CUDA
// A backend this build was made without: a known name whose runs fail with
// exit status 1, saying why.
class MissingBackend final : public Backend {
 public:
  MissingBackend(std::string_view name, std::string why) : name_(name), why_(std::move(why)) {}

  [[nodiscard]] std::string_view name() const override { return name_; }
  void require_available() const override { throw RunError(why_); }
  [[nodiscard]] bool runs_ranks_as_processes() const override { return false; }
  [[nodiscard]] bool meets_at_store() const override { return true; }
  [[nodiscard]] std::string describe(const schedules::Schedule&, const BackendOptions&,
                                     const LaunchRole&) const override {
    return std::string(name_);
  }
  [[nodiscard]] BackendRun train(const TrainOptions&, const BackendOptions&,
                                 const LaunchRole&) const override {
    require_available();
    return {};
  }
  [[nodiscard]] profiles::Profile profile(const models::Model&, std::span<const int>,
                                          const ProfilerOptions&, const BackendOptions&,
                                          int) const override {
    require_available();
    return {};
  }
  [[nodiscard]] inference::ServingResult serve(const inference::ServingRequest&,
                                              const BackendOptions&) const override {
    require_available();
    return {};
  }

 private:
  std::string_view name_;
  std::string why_;
};

const Backend& cuda_backend() {
  static const MissingBackend missing(
      "cuda", "--backend cuda: this build has no CUDA backend (configure with the CUDA toolkit)");
  return missing;
}
#else
const Backend& cuda_backend() { return cuda::cuda_backend(); }
#endif

std::array<const Backend*, 2> registry() { return {&cpu_entry(), &cuda_backend()}; }

}  // namespace

const Backend& find_backend(std::string_view name) {
  for (const Backend* backend : registry()) {
    if (backend->name() == name) return *backend;
  }
  throw InputError(fmt::format("--backend {}: unknown (known: {})", name, fmt::join(backend_names(), ", ")));
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* backend : registry()) names.emplace_back(backend->name());
  return names;
}

}  // namespace gpipe::exec
