#include "exec/mpi/mpi_link.hpp"

#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec::mpi {
namespace {

// The values of either element type (both are 4 bytes), as bytes for MPI.
void* bytes_of(Tensor& tensor) {
  return tensor.type() == ElementType::f32 ? static_cast<void*>(tensor.f32().data())
                                           : static_cast<void*>(tensor.i32().data());
}

}  // namespace

MpiLink::MpiLink(const MpiWorld& world, FailureWatch& watch, int num_stages, int num_microbatches,
                 ActionTimer* timer, int first_world_rank, int stride)
    : world_(world),
      watch_(watch),
      num_stages_(num_stages),
      num_microbatches_(num_microbatches),
      timer_(timer),
      first_world_rank_(first_world_rank),
      stride_(stride) {
  // Two per (stage, micro-batch), and a tied embedding's two gradients.
  const std::int64_t needed = kFirstDataTag + std::int64_t{2} * num_stages * num_microbatches + 2;
  if (needed > world.max_tag()) {
    throw InputError(fmt::format("{} stages x {} micro-batches need MPI tags up to {}, over this MPI's "
                                 "largest, {}: use fewer micro-batches",
                                 num_stages, num_microbatches, needed, world.max_tag()));
  }
}

MpiLink::~MpiLink() {
  // After a failed run a send may still be posted to a peer that is gone:
  // its buffer must outlive MPI's use of it.
  std::size_t leftover = 0;
  for (Pending& p : pending_) {
    int done = 0;
    MPI_Testall(2, p.requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done == 0) ++leftover;
  }
  if (leftover > 0) {
    // Leaked on purpose: freeing memory MPI may still read is worse.
    new std::list<Pending>(std::move(pending_));
  }
}

int MpiLink::tag_of(const MessageTag& tag) const {
  if (tag.kind == MessageKind::tied_gradient) {
    return kFirstDataTag + 2 * num_stages_ * num_microbatches_ + (tag.stage.value == 0 ? 0 : 1);
  }
  const int kind = tag.kind == MessageKind::activation ? 0 : 1;
  return kFirstDataTag + (kind * num_stages_ + tag.stage.value) * num_microbatches_ + tag.microbatch.value;
}

void MpiLink::reap() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    check(MPI_Testall(2, it->requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    it = done != 0 ? pending_.erase(it) : std::next(it);
  }
}

void MpiLink::send(schedules::Rank /*from*/, schedules::Rank to, const MessageTag& tag, Tensor tensor,
                   const ActionMark& mark) {
  const TimedScope timed(timer_, mark);
  reap();
  if (tensor.shape().size() > kMaxDims) {
    throw RunError(fmt::format("{}: a tensor of {} dimensions, over the link's {}", to_string(tag),
                               tensor.shape().size(), kMaxDims));
  }
  if (tensor.bytes() > std::numeric_limits<int>::max()) {
    throw RunError(fmt::format("{}: {} bytes, over MPI's 2 GB a message", to_string(tag), tensor.bytes()));
  }
  tensor.charge_to(nullptr);  // in flight: neither the sender's nor the receiver's memory
  Pending& p = pending_.emplace_back();
  p.header[0] = tensor.type() == ElementType::f32 ? 0 : 1;
  p.header[1] = static_cast<std::int64_t>(tensor.shape().size());
  for (std::size_t d = 0; d < tensor.shape().size(); ++d) p.header[2 + d] = tensor.shape()[d];
  p.tensor = std::move(tensor);
  const int t = tag_of(tag);
  check(MPI_Isend(p.header.data(), static_cast<int>(p.header.size()), MPI_INT64_T, world_rank(to), t,
                  MPI_COMM_WORLD,
                  &p.requests[0]),
        "MPI_Isend");
  check(MPI_Isend(bytes_of(p.tensor), static_cast<int>(p.tensor.bytes()), MPI_BYTE, world_rank(to), t, MPI_COMM_WORLD,
                  &p.requests[1]),
        "MPI_Isend");
}

Tensor MpiLink::receive(schedules::Rank /*to*/, schedules::Rank from, const MessageTag& tag,
                        const ActionMark& mark) {
  const TimedScope timed(timer_, mark);
  const int t = tag_of(tag);
  Header header{};
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Irecv(header.data(), static_cast<int>(header.size()), MPI_INT64_T, world_rank(from), t,
                  MPI_COMM_WORLD,
                  &request),
        "MPI_Irecv");
  const auto between = [this] { watch_.check(); };
  try {
    world_.wait(request, between);
  } catch (...) {
    MPI_Cancel(&request);
    MPI_Request_free(&request);
    throw;
  }
  const auto dims = static_cast<std::size_t>(header[1]);
  if (dims > kMaxDims || (header[0] != 0 && header[0] != 1)) {
    throw RunError(fmt::format("{}: a malformed header from rank {}", to_string(tag), from.value));
  }
  std::vector<std::int64_t> shape(header.begin() + 2, header.begin() + 2 + static_cast<std::ptrdiff_t>(dims));
  // Every value is overwritten by the message: zeroing 4 MB first cost the
  // receive a few hundred us, counted as the link's.
  Tensor tensor = Tensor::uninitialized(std::move(shape), header[0] == 0 ? ElementType::f32 : ElementType::i32);
  check(MPI_Irecv(bytes_of(tensor), static_cast<int>(tensor.bytes()), MPI_BYTE,
                  world_rank(from), t, MPI_COMM_WORLD, &request),
        "MPI_Irecv");
  world_.wait(request, between);  // the values follow their header: a failure now ends the process anyway
  return tensor;
}

void MpiLink::flush() {
  const auto between = [this] { watch_.check(); };
  for (Pending& p : pending_) {
    for (MPI_Request& r : p.requests) world_.wait(r, between);
  }
  pending_.clear();
}

}  // namespace gpipe::exec::mpi
