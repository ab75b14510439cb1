#include "exec/mpi/mpi_serving.hpp"

#include <array>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/inference/serving_rank.hpp"
#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_link.hpp"
#include "exec/mpi/mpi_process_group.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/termination.hpp"

namespace gpipe::exec::mpi {
namespace {

using Clock = std::chrono::steady_clock;
using inference::Admission;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;

// This process's stage and its peers, the other processes.
class MpiPeers final : public inference::ServingPeers {
 public:
  MpiPeers(const inference::ServingRequest& rq, MpiWorld& world, FailureWatch& watch, MpiProcessGroup& group)
      : world_(world),
        watch_(watch),
        group_(group),
        num_stages_(world.size()),
        // One tag per stage boundary: a boundary's items arrive in order.
        link_(world, watch, num_stages_, 1, nullptr),
        arrivals_ns_(schedules::arrival_times_ns(rq.workload)),
        in_flight_(rq.workload.in_flight),
        closed_loop_(rq.workload.closed_loop()),
        completed_ns_(arrivals_ns_.size(), 0) {}

  void start_line() override { origin_ = group_.step_sync().arrive(0); }

  [[nodiscard]] std::int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
  }

  // As Admission::admit, with the completions coming from the last stage's process.
  [[nodiscard]] Admission::Entry admit(int item) override {
    const std::int64_t arrival = arrivals_ns_.at(static_cast<std::size_t>(item));
    if (!closed_loop_) {
      // Sleeps in short steps, so that a peer's failure is seen, and polls
      // the last millisecond (a sleeping thread wakes tens of us late).
      constexpr std::int64_t kPollNs = 1'000'000;
      for (std::int64_t left = arrival - now_ns(); left > 0; left = arrival - now_ns()) {
        watch_.check();
        if (left > kPollNs) {
          std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(left - kPollNs, kPollNs)));
        } else {
          std::this_thread::yield();
        }
      }
    }
    std::int64_t admitted = arrival;
    if (item >= in_flight_) {
      while (completed_ <= item - in_flight_) take_completion();
      admitted = std::max(admitted, completed_ns_[static_cast<std::size_t>(item - in_flight_)]);
    }
    return {closed_loop_ ? admitted : arrival, admitted};
  }

  void completed(int item, std::int64_t completed_ns) override {
    if (num_stages_ == 1) {  // stage 0 is here
      completed_ns_[static_cast<std::size_t>(item)] = completed_ns;
      completed_ = item + 1;
      return;
    }
    const std::array<std::int64_t, 2> message{item, completed_ns};
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(message.data(), 2, MPI_INT64_T, 0, kCompletionTag, MPI_COMM_WORLD, &request), "MPI_Isend");
    world_.wait(request, [this] { watch_.check(); });
  }

  [[nodiscard]] Received receive(int stage, int item) override {
    Tensor tensor = link_.receive(Rank{stage}, Rank{stage - 1}, tag(stage - 1), mark(stage, item));
    return {std::move(tensor), now_ns()};
  }

  void send(int stage, int item, std::int64_t /*handed_ns*/, Tensor activation) override {
    link_.send(Rank{stage}, Rank{stage + 1}, tag(stage), std::move(activation), mark(stage, item));
  }

  // Every send has left this process (the stream's end).
  void flush() { link_.flush(); }

 private:
  static MessageTag tag(int from_stage) { return {0, MessageKind::activation, Stage{from_stage}, Microbatch{0}}; }
  static ActionMark mark(int stage, int /*item*/) { return {Rank{stage}, -1, 0, {}}; }

  // The next completion, from the last stage's process (they come in item order).
  void take_completion() {
    std::array<std::int64_t, 2> message{};
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Irecv(message.data(), 2, MPI_INT64_T, num_stages_ - 1, kCompletionTag, MPI_COMM_WORLD, &request),
          "MPI_Irecv");
    world_.wait(request, [this] { watch_.check(); });
    completed_ns_.at(static_cast<std::size_t>(message[0])) = message[1];
    completed_ = static_cast<int>(message[0]) + 1;
  }

  MpiWorld& world_;
  FailureWatch& watch_;
  MpiProcessGroup& group_;
  int num_stages_;
  MpiLink link_;
  std::vector<std::int64_t> arrivals_ns_;
  int in_flight_;
  bool closed_loop_;
  Clock::time_point origin_;
  int completed_ = 0;  // items 0..completed_-1 have completed
  std::vector<std::int64_t> completed_ns_;
};

}  // namespace

ServedProcess serve_as_mpi_process(const inference::ServingRequest& rq, const std::string& launcher,
                                         const std::string& device) {
  inference::check_serving_request(rq);
  MpiWorld world;
  catch_termination_signals();  // after MPI's start, so that ours are the handlers
  FailureWatch watch(world);
  const int K = static_cast<int>(rq.layers_per_stage.size());
  try {
    if (world.size() != K) {
      throw InputError(fmt::format("--stages {} but {} started {} processes: launch one process per stage", K,
                                   launcher, world.size()));
    }
    MpiProcessGroup group(world, watch);
    MpiPeers peers(rq, world, watch, group);
    inference::RankRecord record;
    try {
      inference::run_serving_rank(rq, world.rank(), K, peers, record);
      peers.flush();
    } catch (const PeerFailed&) {
      throw;
    } catch (const std::exception& e) {
      group.announce_failure(e.what());
      throw;
    }
    const Rank reporter{K - 1};
    const std::vector<std::string> texts = group.gather_text(inference::to_json_text(record), reporter);
    ServedProcess served;
    served.clock = group.clock();
    if (world.rank() == reporter.value) {
      std::vector<inference::RankRecord> records;
      for (int s = 0; s < K; ++s) {
        records.push_back(s == reporter.value ? std::move(record)
                                              : inference::parse_rank_record(texts[static_cast<std::size_t>(s)]));
      }
      served.result = inference::assemble_serving(rq, std::move(records), device);
    }
    return served;
  } catch (...) {
    // Peers may be gone or still waiting: MPI_Finalize could wait for them.
    world.skip_finalize();
    throw;
  }
}

}  // namespace gpipe::exec::mpi
