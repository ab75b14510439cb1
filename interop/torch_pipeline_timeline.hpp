// torch.distributed.pipelining's own run as a measured Timeline:
// one PyTorch profiler trace per rank (interop/kineto_trace.hpp), read into
// the actions gpipe predicts, so that `gpipe-sim diff` compares torch's real
// run with a prediction action by action.
//
// What torch labels (2.15): its schedule runtime (every multi-stage schedule,
// and any schedule run from a CSV) puts "PP:<action>" around each action
// ("PP:0F3", "PP:2SEND_B1", gpipe's own action text); ScheduleGPipe puts
// "Forward i" and "Backward i" around each micro-batch's work, its receive
// and its send included; Schedule1F1B puts none (run it from its CSV through
// the runtime to get labels). A transfer is a c10d::send / c10d::recv_ op
// (posting it) and a "gloo:send" / "gloo:recv" span from the post to its
// completion. A trace of several steps is read step by step: by its
// ProfilerStep#N spans, else (no prof.step()) from each recurrence of the
// rank's first label; every rank must hold as many. The step read is the one
// asked for, else the median by span. In that step of each trace:
// - a RECV runs from its post to the completion of its bytes; a SEND from its
//   post to its completion (a send completes when its receiver has the bytes);
// - a compute action (F, B, I, W) starts when the message it waits for has
//   come (an F its RECV_F's, a B its RECV_B's, where that ends inside the
//   action's label) and, under "Forward i" / "Backward i", ends where its
//   send is posted; the runtime's other actions (UNSHARD, RESHARD,
//   REDUCE_GRAD, WAIT_REDUCE_GRAD, WAIT_SEND_F/B) are their labels; a label
//   that is no action of gpipe's is left out, and counted.
// Clocks: each trace's times are its "baseTimeNanoseconds" plus its ts. The
// run enters a barrier before the step, and every rank leaves it within a
// message's time of the last one's arrival. On one host (every trace's
// host_name the same) the base times are one clock, and the barrier's exits
// agree within kMaxBarrierExitSpreadNs (1 ms): then they stand. Else each
// rank is shifted so that its barrier exit meets rank 0's, and the clock
// error is at most the shortest rank's time in the barrier.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "interop/kineto_trace.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::interop {

struct TorchClock {
  std::string method;           // "one host's clock (the traces' base times)" or "barrier exits aligned"
  std::int64_t error_ns = 0;    // the bound on any rank's misalignment
  std::int64_t barrier_exit_spread_ns = 0;  // latest minus earliest exit on the clock used
};

struct TorchPipelineRun {
  timelines::Timeline timeline;  // source "torch"; times in ns from rank 0's barrier exit
  TorchClock clock;
  std::vector<std::string> left_out;  // labels that are no action of gpipe's, by kind: "FOO x3"
  // The traces' steps, and the one read (1 = the first): the one asked for,
  // else the median by span (from rank 0's barrier exit to the step's last
  // action's end; step_spans_ns, one per step).
  int steps = 1;
  int step = 1;
  std::vector<std::int64_t> step_spans_ns;
  std::string chosen;  // "the median", "asked for", "the only one"
};

struct TorchRunOptions {
  std::optional<int> step;  // 1 = the first; nullopt: the median step
};

inline constexpr std::int64_t kMaxBarrierExitSpreadNs = 1'000'000;

// `traces` in any order, one per rank (distributedInfo names each). Throws
// InputError naming the trace and what is missing: a rank missing or twice, a
// trace without distributedInfo, without pipeline labels (saying how to get
// them), without a barrier before a step, a transfer without its span, ranks
// with different numbers of steps, or a step past them.
[[nodiscard]] TorchPipelineRun torch_pipeline_run(const std::vector<KinetoTrace>& traces,
                                                 const TorchRunOptions& options = {});

}  // namespace gpipe::interop
