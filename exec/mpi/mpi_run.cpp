#include "exec/mpi/mpi_run.hpp"

#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_context_parallel.hpp"
#include "exec/mpi/mpi_gradient_reducer.hpp"
#include "exec/mpi/mpi_link.hpp"
#include "exec/mpi/mpi_process_group.hpp"
#include "exec/mpi/mpi_tensor_parallel.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/mpi/world_training.hpp"
#include "exec/runtime/termination.hpp"
#include "models/collective.hpp"

namespace gpipe::exec::mpi {

bool built_with_mpi() { return true; }

Trained<cpu::CpuBackend> train_in_world(MpiWorld& world, const TrainOptions& options, const std::string& launcher) {
  FailureWatch watch(world);
  try {
    check_train_options(options, cpu::CpuBackend::kName, runs_split_backward<cpu::CpuBackend>());
    check_launch_fits(options, world.size(), launcher);
    const int members = options.model.context_parallel;
    MpiProcessGroup group(world, watch, options.replicas(), options.tensor_parallel, members);
    std::unique_ptr<MpiGradientReducer> reducer;
    if (options.schedule.data_parallel > 1) {  // the gradient group, D x C
      reducer = std::make_unique<MpiGradientReducer>(world, watch, group.data_parallel_comm(), models::kGradientBucketBytes,
                                                     group.one_node(), options.zero);
    }
    std::unique_ptr<MpiTensorParallel> parts;
    if (options.tensor_parallel > 1) parts = std::make_unique<MpiTensorParallel>(world, watch, group.tensor_parallel_comm());
    std::unique_ptr<MpiContextParallel> context;
    if (members > 1) context = std::make_unique<MpiContextParallel>(world, watch, group.context_parallel_comm());
    cpu::CpuBackend::Options cpu;
    cpu.process_link = [&](ActionTimer& timer) {
      return std::make_unique<MpiLink>(world, watch, options.schedule.num_stages, options.schedule.num_microbatches,
                                       &timer, group.world_rank_of(0), group.rank_stride());
    };
    cpu.gradient_reducer = reducer.get();
    cpu.tensor_parallel = parts.get();
    cpu.context_parallel = context.get();
    return train_in_group<cpu::CpuBackend>(options, cpu, group);
  } catch (...) {
    // Peers may be gone or still waiting: MPI_Finalize could wait for them.
    world.skip_finalize();
    throw;
  }
}

Trained<cpu::CpuBackend> train_as_mpi_process(const TrainOptions& options, const std::string& launcher) {
  MpiWorld world;
  catch_termination_signals();  // after MPI's start, so that ours are the handlers
  return train_in_world(world, options, launcher);
}

}  // namespace gpipe::exec::mpi
