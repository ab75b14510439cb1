#include "exec/inference/cpu_serving.hpp"

#include <chrono>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/device_name.hpp"
#include "exec/cpu/in_process_link.hpp"
#include "exec/inference/admission.hpp"
#include "exec/inference/serving_rank.hpp"
#include "exec/runtime/aborted.hpp"

namespace gpipe::exec::inference {
namespace {

using Clock = std::chrono::steady_clock;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;

// What every rank's thread shares.
struct Shared {
  Admission admission;
  cpu::InProcessLink link;
  Clock::time_point origin;
  std::latch built;  // every rank has built and warmed its stage
  std::latch go;     // the origin is set: the run starts
  // handed_ns[s][r]: when stage s handed item r's output on (ns from the
  // start), which is when it arrives: written before the send, read by the
  // receiver after it.
  std::vector<std::vector<std::int64_t>> handed_ns;
  std::mutex failure_mutex;
  std::optional<std::string> failure;

  // The run's first error; the other ranks' waits end.
  void fail(std::string line) {
    {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::move(line);
    }
    admission.abort();
    link.abort();
  }
};

// One rank's thread's peers: the others, through `shared`.
class ThreadPeers final : public ServingPeers {
 public:
  explicit ThreadPeers(Shared& shared) : shared_(shared) {}

  void start_line() override {
    shared_.built.count_down();
    shared_.go.wait();
  }
  [[nodiscard]] std::int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - shared_.origin).count();
  }
  [[nodiscard]] Admission::Entry admit(int item) override { return shared_.admission.admit(item); }
  void completed(int item, std::int64_t completed_ns) override { shared_.admission.completed(item, completed_ns); }
  [[nodiscard]] Received receive(int stage, int item) override {
    Tensor tensor = shared_.link.receive(Rank{stage}, Rank{stage - 1}, tag(stage - 1, item), {Rank{stage}, -1, 0, {}});
    return {std::move(tensor), shared_.handed_ns[static_cast<std::size_t>(stage - 1)][static_cast<std::size_t>(item)]};
  }
  void send(int stage, int item, std::int64_t handed_ns, Tensor activation) override {
    shared_.handed_ns[static_cast<std::size_t>(stage)][static_cast<std::size_t>(item)] = handed_ns;
    shared_.link.send(Rank{stage}, Rank{stage + 1}, tag(stage, item), std::move(activation), {Rank{stage}, -1, 0, {}});
  }

 private:
  static MessageTag tag(int from_stage, int item) {
    return {0, MessageKind::activation, Stage{from_stage}, Microbatch{item}};
  }

  Shared& shared_;
};

}  // namespace

ServingResult run_cpu_serving(const ServingRequest& rq) {
  check_serving_request(rq);
  const int K = static_cast<int>(rq.layers_per_stage.size());
  const auto R = static_cast<std::size_t>(rq.workload.requests);
  // Waiters poll where every rank's threads have a core, as training's do.
  const SpinBudget spin = cpu::polling_budget(K * rq.threads_per_rank);
  Shared shared{.admission = Admission(schedules::arrival_times_ns(rq.workload), rq.workload.in_flight,
                                       rq.workload.closed_loop(), spin),
                .link = cpu::InProcessLink(K, nullptr, spin),
                .origin = {},
                .built = std::latch(K),
                .go = std::latch(1),
                .handed_ns = std::vector<std::vector<std::int64_t>>(static_cast<std::size_t>(K - 1),
                                                                   std::vector<std::int64_t>(R, 0)),
                .failure_mutex = {},
                .failure = {}};
  std::vector<RankRecord> records(static_cast<std::size_t>(K));
  {
    std::vector<std::jthread> ranks;
    for (int s = 0; s < K; ++s) {
      ranks.emplace_back([&, s] {
        ThreadPeers peers(shared);
        try {
          run_serving_rank(rq, s, K, peers, records[static_cast<std::size_t>(s)]);
        } catch (const Aborted&) {
          // another rank has the run's error
        } catch (const std::exception& e) {
          shared.fail(e.what());
        }
      });
    }
    // Every rank has built and warmed its stage: the run starts now.
    shared.built.wait();
    shared.origin = Clock::now();
    shared.admission.start(shared.origin);
    shared.go.count_down();
  }
  if (shared.failure) throw RunError(*shared.failure);
  return assemble_serving(rq, std::move(records), cpu::device_name(rq.threads_per_rank));
}

}  // namespace gpipe::exec::inference
