#include "exec/cpu/cpu_backend.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/device_name.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/profiler.hpp"

namespace gpipe::exec::cpu {

namespace {

bool finite_values(const Tensor& tensor) {
  for (float v : tensor.f32()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

}  // namespace

void CpuBackend::add_into(Tensor& dst, const Tensor& src, const Context& /*context*/) {
  if (dst.shape() != src.shape()) throw std::logic_error("add_into: the two tensors differ in shape");
  float* d = dst.data();
  const float* s = src.data();
  for (std::int64_t i = 0; i < dst.numel(); ++i) d[i] += s[i];
}

bool CpuBackend::all_finite(const Tensor& tensor, const Context& /*context*/) {
  return finite_values(tensor);
}

std::vector<float> CpuBackend::to_host(const Tensor& tensor, const Context& /*context*/) {
  return {tensor.f32().begin(), tensor.f32().end()};
}

void CpuBackend::RankDevice::enter_thread() {
  prepare_blas_thread();
  if (threads_ > 1) team_ = std::make_unique<ComputeTeam>(threads_, spin_);
  ComputeTeam::enter_for_thread(team_.get());
}

bool CpuBackend::RankDevice::all_finite(const Tensor& tensor) const { return finite_values(tensor); }

double CpuBackend::RankDevice::sum(const Tensor& tensor) const {
  double total = 0;
  for (float v : tensor.f32()) total += v;
  return total;
}

CpuBackend::Run::Run(const TrainOptions& options, const RunSettings& settings,
                     const Placement& where, const Options& backend_options)
    : timer_(settings.schedule->num_ranks, settings.measured_steps),
      // Every rank's threads on this machine's cores (with ranks as
      // processes, all K on one node at worst): waiters poll when each has a core.
      spin_(polling_budget(settings.schedule->num_ranks * settings.replicas * options.tensor_parallel * settings.context_parallel *
                           options.threads_per_rank)),
      in_process_link_(settings.schedule->num_ranks, &timer_, spin_),
      threads_per_rank_(options.threads_per_rank) {
  devices_.reserve(static_cast<std::size_t>(settings.schedule->num_ranks));
  for (int r = 0; r < settings.schedule->num_ranks; ++r) devices_.emplace_back(options.threads_per_rank, spin_);
  if (where.group != nullptr) {
    if (!backend_options.process_link) {
      throw InputError("the cpu backend has no link between processes here: start it without a launcher");
    }
    process_link_ = backend_options.process_link(timer_);
  }
  gradient_reducer_ = backend_options.gradient_reducer;
  for (int r = 0; r < settings.schedule->num_ranks; ++r) {
    if (backend_options.tensor_parallel != nullptr) {
      timed_parts_.push_back(
          std::make_unique<TimedTensorParallel>(*backend_options.tensor_parallel, timer_, schedules::Rank{r}));
    }
    if (backend_options.context_parallel != nullptr) {
      timed_context_.push_back(
          std::make_unique<TimedContextParallel>(*backend_options.context_parallel, timer_, schedules::Rank{r}));
    }
  }
  if (settings.schedule->data_parallel > 1 && gradient_reducer_ == nullptr) {  // D x C
    throw std::logic_error("a data-parallel run without a gradient reducer");
  }
}

std::string CpuBackend::Run::device_name() const { return cpu::device_name(threads_per_rank_); }

TrainResult train(const TrainOptions& options) {
  return train_in_process<CpuBackend>(options).result;
}

}  // namespace gpipe::exec::cpu
