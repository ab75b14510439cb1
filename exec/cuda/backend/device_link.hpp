// How the CUDA backend's ranks hand activations and gradients to each other:
// the runtime's Link (exec/runtime/link.hpp) over device tensors.
// InProcessDeviceLink copies between the ranks (threads) of one process on
// one GPU; NcclDeviceLink moves them between processes over NCCL. Both order
// the data on CUDA streams and never make the host wait for the GPU: a
// receive yields an Arrival, which the consumer's RankDevice::ready() orders
// before the compute that reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/runtime/link.hpp"
#include "exec/runtime/message.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cuda {

// A message in the receiver's memory, and the event after which it is there
// (the consumer's compute stream waits on it before reading; null when it is
// already ordered on the compute stream).
struct Arrival {
  DeviceTensor tensor;
  std::shared_ptr<Event> ready;
};

using DeviceLink = Link<DeviceTensor, Arrival>;

// What the receiver knows of a message before it arrives.
struct MessageSpec {
  std::vector<std::int64_t> shape;
  DeviceType type = DeviceType::f32;
};

// The shape of every message of a run: what a stage sends forward (and gets
// back as its gradient) for a micro-batch of b samples is f32 [b, rows, H]
// for models with a sequence (rows: S, or T+1 for dit, whose conditioning row
// travels with the tokens; Model::activation_rows), [b, H] otherwise; a tied
// embedding's gradient is f32 [V, H].
class MessageShapes {
 public:
  MessageShapes(const models::Model& model, std::vector<int> microbatch_sizes)
      : model_(&model), sizes_(std::move(microbatch_sizes)) {}

  [[nodiscard]] MessageSpec of(const MessageTag& tag) const {
    // A tied embedding's gradient: the token table's [V, H].
    if (tag.kind == MessageKind::tied_gradient) return {{model_->vocab, model_->hidden}, DeviceType::f32};
    const std::int64_t b = sizes_.at(tag.microbatch.at());
    if (model_->seq > 0) return {{b, model_->activation_rows(), model_->hidden}, DeviceType::f32};
    return {{b, model_->hidden}, DeviceType::f32};
  }

 private:
  const models::Model* model_;
  std::vector<int> sizes_;
};

}  // namespace gpipe::exec::cuda
