#include "exec/mpi/failure_watch.hpp"

#include <chrono>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "exec/runtime/aborted.hpp"

namespace gpipe::exec::mpi {

void FailureWatch::check() {
  if (aborted_.load(std::memory_order_acquire)) throw Aborted();
  int found = 0;
  MPI_Status status;
  mpi::check(MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, MPI_COMM_WORLD, &found, &status), "MPI_Iprobe");
  if (found == 0) return;
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string line(static_cast<std::size_t>(length), '\0');
  mpi::check(MPI_Recv(line.data(), length, MPI_CHAR, status.MPI_SOURCE, kFailureTag, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE),
             "MPI_Recv");
  char ack = 1;
  MPI_Send(&ack, 1, MPI_CHAR, status.MPI_SOURCE, kAckTag, MPI_COMM_WORLD);  // small: returns at once
  peer_failed_ = true;
  throw PeerFailed(fmt::format("{} (rank {}'s process stopped for it)", line, world_.rank()));
}

void FailureWatch::announce(const std::string& line, double ack_seconds) noexcept {
  if (peer_failed_) return;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(ack_seconds));
  std::vector<MPI_Request> requests;
  std::vector<char> acks(static_cast<std::size_t>(world_.size()), 0);
  for (int r = 0; r < world_.size(); ++r) {
    if (r == world_.rank()) continue;
    MPI_Request send = MPI_REQUEST_NULL;
    MPI_Request ack = MPI_REQUEST_NULL;
    MPI_Isend(line.data(), static_cast<int>(line.size()), MPI_CHAR, r, kFailureTag, MPI_COMM_WORLD, &send);
    MPI_Irecv(&acks[static_cast<std::size_t>(r)], 1, MPI_CHAR, r, kAckTag, MPI_COMM_WORLD, &ack);
    requests.push_back(send);
    requests.push_back(ack);
  }
  while (Clock::now() < deadline) {
    int done = 0;
    if (MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE) !=
            MPI_SUCCESS ||
        done != 0) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace gpipe::exec::mpi
