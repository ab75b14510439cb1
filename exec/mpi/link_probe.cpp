#include "exec/mpi/link_probe.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "exec/mpi/mpi_world.hpp"
#include "profiles/link_fit.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::mpi {
namespace {

constexpr int kWarmup = 2;

// Round trips per size: many for small messages (their time is noise-prone
// and cheap), fewer for large ones; about 64 MiB of traffic per size at most.
int round_trips(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{64} << 20) / bytes, 5, 200));
}

// Rank 0's median one-way time of `bytes`, in us; rank 1 echoes.
double ping_pong(const MpiWorld& world, std::vector<char>& buffer, std::int64_t bytes) {
  const int count = static_cast<int>(bytes);
  const int trips = round_trips(bytes);
  std::vector<double> times;
  for (int i = 0; i < kWarmup + trips; ++i) {
    if (world.rank() == 0) {
      const std::int64_t start = steady_now_ns();
      check(MPI_Send(buffer.data(), count, MPI_BYTE, 1, kProbeTag, MPI_COMM_WORLD), "MPI_Send");
      check(MPI_Recv(buffer.data(), count, MPI_BYTE, 1, kProbeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      if (i >= kWarmup) times.push_back(static_cast<double>(steady_now_ns() - start) / 2e3);
    } else {
      check(MPI_Recv(buffer.data(), count, MPI_BYTE, 0, kProbeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      check(MPI_Send(buffer.data(), count, MPI_BYTE, 0, kProbeTag, MPI_COMM_WORLD), "MPI_Send");
    }
  }
  if (times.empty()) return 0;
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

}  // namespace

ProbedLink probe_mpi_link(const LinkProbeOptions& options) {
  MpiWorld world;
  ProbedLink out{world.rank(), world.size(), {}};
  if (world.size() < 2) {
    throw InputError("measuring the link needs two processes: start it with mpirun -np 2 (or srun -n 2)");
  }
  // Where ranks 0 and 1 run, for the profile's record of how it was measured.
  std::vector<char> hosts(2 * MPI_MAX_PROCESSOR_NAME, '\0');
  if (world.rank() < 2) {
    std::copy(world.host().begin(), world.host().end(), hosts.begin() + world.rank() * MPI_MAX_PROCESSOR_NAME);
  }
  check(MPI_Allreduce(MPI_IN_PLACE, hosts.data(), static_cast<int>(hosts.size()), MPI_UNSIGNED_CHAR, MPI_MAX,
                      MPI_COMM_WORLD),
        "MPI_Allreduce");
  std::vector<profiles::LinkPoint> points;
  if (world.rank() < 2) {
    std::vector<char> buffer(static_cast<std::size_t>(options.max_bytes), 1);
    for (std::int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
      const profiles::LinkPoint point{bytes, ping_pong(world, buffer, bytes)};
      if (world.rank() == 0) {
        points.push_back(point);
        if (options.on_point) options.on_point(point);
      }
    }
  }
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  if (world.rank() == 0) {
    const std::string host0(hosts.data());
    const std::string host1(hosts.data() + MPI_MAX_PROCESSOR_NAME);
    out.link = profiles::fit_link(
        std::move(points),
        host0 == host1 ? fmt::format("MPI ping-pong between ranks 0 and 1 on one node ({})", host0)
                       : fmt::format("MPI ping-pong between ranks 0 and 1 on {} and {}", host0, host1));
  }
  return out;
}

}  // namespace gpipe::exec::mpi
