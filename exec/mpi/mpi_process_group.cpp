#include "exec/mpi/mpi_process_group.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "exec/dist/rank_part.hpp"

namespace gpipe::exec::mpi {
namespace {

constexpr int kClockRounds = 32;
constexpr std::size_t kHostChars = 256;

// Each process's host name, by rank.
std::vector<std::string> host_names(const MpiWorld& world) {
  std::array<char, kHostChars> mine{};
  std::copy_n(world.host().begin(), std::min(world.host().size(), kHostChars - 1), mine.begin());
  std::vector<char> all(kHostChars * static_cast<std::size_t>(world.size()));
  check(MPI_Allgather(mine.data(), kHostChars, MPI_CHAR, all.data(), kHostChars, MPI_CHAR, MPI_COMM_WORLD),
        "MPI_Allgather");
  std::vector<std::string> names;
  for (int r = 0; r < world.size(); ++r) names.emplace_back(&all[kHostChars * static_cast<std::size_t>(r)]);
  return names;
}

}  // namespace

MpiProcessGroup::MpiProcessGroup(MpiWorld& world, FailureWatch& watch, int replicas, int tensor_parallel,
                                 int context_parallel)
    : world_(world),
      watch_(watch),
      tensor_(std::max(1, tensor_parallel)),
      parts_(std::max(1, tensor_parallel) * std::max(1, context_parallel)),
      ranks_per_replica_(world.size() / std::max(1, replicas * parts_)),
      sync_(*this) {
  if (replicas < 1 || tensor_parallel < 1 || context_parallel < 1 || world.size() % (replicas * parts_) != 0) {
    throw std::logic_error(fmt::format("{} replicas of {} x {} parts do not divide {} processes", replicas,
                                       tensor_parallel, context_parallel, world.size()));
  }
  agree_on_clocks();
  const int members = parts_ / tensor_;
  if (replicas > 1 || members > 1) {
    // Same pipeline rank and tensor part; ordered by replica, then member.
    const int same_rank_and_part = rank() * tensor_ + tensor_parallel_rank();
    check(MPI_Comm_split(MPI_COMM_WORLD, same_rank_and_part, replica() * members + context_parallel_rank(),
                         &data_parallel_comm_),
          "MPI_Comm_split");
  }
  if (tensor_ > 1) {
    check(MPI_Comm_split(MPI_COMM_WORLD, world.rank() / tensor_, tensor_parallel_rank(), &tensor_parallel_comm_),
          "MPI_Comm_split");
  }
  if (members > 1) {
    const int same_rank_and_part = (world.rank() / parts_) * tensor_ + tensor_parallel_rank();
    check(MPI_Comm_split(MPI_COMM_WORLD, same_rank_and_part, context_parallel_rank(), &context_parallel_comm_),
          "MPI_Comm_split");
  }
}

MpiProcessGroup::~MpiProcessGroup() {
  // Local in Open MPI: it frees a handle once no operation uses it.
  if (data_parallel_comm_ != MPI_COMM_NULL) MPI_Comm_free(&data_parallel_comm_);
  if (tensor_parallel_comm_ != MPI_COMM_NULL) MPI_Comm_free(&tensor_parallel_comm_);
  if (context_parallel_comm_ != MPI_COMM_NULL) MPI_Comm_free(&context_parallel_comm_);
}

void MpiProcessGroup::agree_on_clocks() {
  const std::vector<std::string> hosts = host_names(world_);
  one_node_ = std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts[0]; });
  const bool one_node = one_node_;
  const char* forced = std::getenv("GPIPE_MPI_CLOCK");
  const bool ping_pong = std::string_view(forced == nullptr ? "" : forced) == "ping-pong";
  // rank 0 measures each process that does not share its clock; [offset, error] each.
  std::vector<std::int64_t> estimate(2 * static_cast<std::size_t>(world_.size()), 0);
  const auto shares_clock = [&](int r) { return !ping_pong && hosts[static_cast<std::size_t>(r)] == hosts[0]; };
  for (int r = 1; r < world_.size(); ++r) {
    if (shares_clock(r)) continue;
    if (world_.rank() == 0) {
      std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max();
      for (int i = 0; i < kClockRounds; ++i) {
        const std::int64_t t0 = steady_now_ns();
        std::int64_t t1 = 0;
        check(MPI_Send(&t0, 1, MPI_INT64_T, r, kClockTag, MPI_COMM_WORLD), "MPI_Send");
        check(MPI_Recv(&t1, 1, MPI_INT64_T, r, kClockTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        const std::int64_t t2 = steady_now_ns();
        if (t2 - t0 < best_rtt) {
          best_rtt = t2 - t0;
          estimate[2 * static_cast<std::size_t>(r)] = t1 - (t0 + t2) / 2;  // its clock minus ours
          estimate[2 * static_cast<std::size_t>(r) + 1] = (best_rtt + 1) / 2;
        }
      }
    } else if (world_.rank() == r) {
      for (int i = 0; i < kClockRounds; ++i) {
        std::int64_t t0 = 0;
        check(MPI_Recv(&t0, 1, MPI_INT64_T, 0, kClockTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        const std::int64_t t1 = steady_now_ns();
        check(MPI_Send(&t1, 1, MPI_INT64_T, 0, kClockTag, MPI_COMM_WORLD), "MPI_Send");
      }
    }
  }
  check(MPI_Bcast(estimate.data(), static_cast<int>(estimate.size()), MPI_INT64_T, 0, MPI_COMM_WORLD),
        "MPI_Bcast");
  offset_ns_ = estimate[2 * static_cast<std::size_t>(world_.rank())];
  std::int64_t worst = 0;
  for (int r = 0; r < world_.size(); ++r) worst = std::max(worst, estimate[2 * static_cast<std::size_t>(r) + 1]);
  if (one_node && !ping_pong) {
    clock_ = {"shared monotonic clock (one node)", 0};
  } else {
    const std::size_t nodes = [&] {
      std::vector<std::string> distinct = hosts;
      std::sort(distinct.begin(), distinct.end());
      return static_cast<std::size_t>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
    }();
    clock_ = {fmt::format("ping-pong offsets to rank 0 ({} node{}, least of {} round trips)", nodes,
                          nodes == 1 ? "" : "s", kClockRounds),
              worst};
  }
}

StepSync::Clock::time_point MpiProcessGroup::Sync::arrive(int /*step*/) {
  FailureWatch& watch = group_.watch_;
  const auto between = [&watch] { watch.check(); };
  watch.check();
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  group_.world_.wait(request, between);
  // Everyone is here: rank 0's clock now is the step's origin, everywhere.
  std::int64_t origin = group_.world_.rank() == 0 ? steady_now_ns() : 0;
  check(MPI_Ibcast(&origin, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &request), "MPI_Ibcast");
  group_.world_.wait(request, between);
  return Clock::time_point(std::chrono::nanoseconds(origin + group_.offset_ns_));
}

std::vector<RankPart> MpiProcessGroup::exchange_parts(const RankPart& mine, schedules::Rank reporter) {
  const std::vector<std::string> texts = gather_text(to_json(mine), reporter);
  std::vector<RankPart> parts;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    parts.push_back(static_cast<int>(r) == reporter.value ? mine : parse_rank_part(texts[r]));
  }
  return parts;
}

std::vector<std::string> MpiProcessGroup::gather_text(const std::string& mine, schedules::Rank reporter) {
  const auto between = [this] { watch_.check(); };
  std::vector<std::string> texts;
  const int to = world_rank_of(reporter.value);
  if (world_.rank() != to) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, to, kPartsTag, MPI_COMM_WORLD, &request),
          "MPI_Isend");
    world_.wait(request, between);
    return texts;
  }
  for (int rank = 0; rank < ranks_per_replica_; ++rank) {
    const int r = world_rank_of(rank);
    if (r == to) {
      texts.push_back(mine);
      continue;
    }
    MPI_Status status;
    for (int found = 0; found == 0;) {
      check(MPI_Iprobe(r, kPartsTag, MPI_COMM_WORLD, &found, &status), "MPI_Iprobe");
      if (found == 0) {
        between();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string text(static_cast<std::size_t>(length), '\0');
    check(MPI_Recv(text.data(), length, MPI_CHAR, r, kPartsTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    texts.push_back(std::move(text));
  }
  return texts;
}

std::string MpiProcessGroup::share_from_rank0(const std::string& /*key*/, const std::string& value) {
  std::int64_t length = world_.rank() == 0 ? static_cast<std::int64_t>(value.size()) : 0;
  check(MPI_Bcast(&length, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string shared = world_.rank() == 0 ? value : std::string(static_cast<std::size_t>(length), '\0');
  check(MPI_Bcast(shared.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return shared;
}

void MpiProcessGroup::announce_failure(const std::string& line) noexcept { watch_.announce(line); }

}  // namespace gpipe::exec::mpi
