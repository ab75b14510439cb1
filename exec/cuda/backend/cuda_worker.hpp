// The worker of one rank of the CUDA executor: a host thread that enqueues
// the rank's lowered action list in order, step after step, on the rank's
// streams, exactly as exec::Worker runs it on the CPU (the same data slots,
// tags, faults and error messages), but without waiting for the GPU: the
// host runs ahead and the GPU's order comes from streams and events.
//
// - F, B, R and STEP go to the rank's compute stream (in its SM partition).
// - SEND hands the tensor to the DeviceLink; RECV has the link bring it into
//   this rank's memory on the receive stream of that link, and the consuming
//   F or B makes the compute stream wait for its arrival.
// - The data of a step (inputs, targets, the loss gradient 1/N) is uploaded
//   before the step barrier, so it is not timed.
// - A step ends when this rank's GPU work is done (polled, so an abort still
//   ends the wait); the last stage's per-sample losses are then read back and
//   summed in double, as the CPU worker sums them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "exec/cuda/backend/device_stage.hpp"
#include "exec/cuda/backend/action_memory_log.hpp"
#include "exec/cuda/backend/action_timer.hpp"
#include "exec/cuda/backend/device_link.hpp"
#include "exec/cuda/backend/rank_device.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "exec/runtime/message_slots.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/worker.hpp"

namespace gpipe::exec::cuda {

struct CudaWorkerLinks {
  DeviceLink* link = nullptr;
  RunControl* control = nullptr;
  // Returns when every rank has reached the start of `step` (a StepBarrier
  // in one process, the rendezvous store across processes); throws Aborted.
  std::function<void(int step)> barrier;
  ActionTimer* timer = nullptr;   // brackets the actions of measured steps
  ActionMemoryLog* memory = nullptr;
};

// The shape of what stage `stage` sends forward (and receives back as its
// gradient) for a micro-batch of `b` samples: f32 [b, S, H] for transformers, [b, H] otherwise.
[[nodiscard]] MessageSpec boundary_spec(const models::Model& model, std::int64_t b);

class CudaWorker {
 public:
  // `stages` is indexed by stage: the rank's own, nullptr elsewhere.
  CudaWorker(schedules::Rank rank, const RunPlan& plan, std::vector<DeviceStage*> stages,
             RankDevice& device, CudaWorkerLinks links);

  // The thread's body: every step, then exit. Never throws.
  void run() noexcept;

 private:
  void run_step(int step);
  void upload_step_data(int step);
  void execute(const schedules::Action& action, std::size_t index, int step, int slot);
  void forward(const schedules::Action& action, std::size_t index, int step, int slot);
  void backward(const schedules::Action& action, std::size_t index, int step, int slot);
  void send(const MessageTag& tag, schedules::Rank to, const schedules::Action& action,
            std::size_t index, int slot);
  [[nodiscard]] TransferTiming transfer_timing(ActionTimer* timer, const schedules::Action& action,
                                               std::size_t index, int slot) const;
  void finish_step(int step);
  // Waits for this rank's streams without blocking an abort.
  void wait_for_gpu();
  [[nodiscard]] DeviceStage& stage(schedules::Stage s) const;
  void put(const MessageTag& tag, Arrival arrival);
  // The tensor of `tag`, ordered before later work on the compute stream.
  [[nodiscard]] DeviceTensor take(const MessageTag& tag, const schedules::Action& action);
  [[nodiscard]] const DeviceTensor* target(const schedules::Action& action) const;

  schedules::Rank rank_;
  const RunPlan& plan_;
  std::vector<DeviceStage*> stages_;
  RankDevice& device_;
  CudaWorkerLinks links_;
  const std::vector<schedules::Action>& program_;
  SyntheticTask task_;
  bool first_ = false;  // holds stage 0
  bool last_ = false;   // holds the loss stage

  // Per step.
  std::vector<DeviceTensor> inputs_;       // per micro-batch, stage 0
  std::vector<DeviceTensor> targets_;      // per micro-batch, last stage
  std::vector<DeviceTensor> loss_grads_;   // per micro-batch, last stage: 1/N each
  std::vector<DeviceTensor> losses_;       // per micro-batch, last stage: f32 [b]
  MessageSlots<Arrival> slots_;
  int current_ = -1;
};

}  // namespace gpipe::exec::cuda
