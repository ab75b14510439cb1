// The NCCL transport on GPUs: a world of 1 initializes on one device; with two
// devices, two ranks (threads here, processes in a run) rendezvous through the
// tcp store and exchange an activation and a gradient. Skips without devices.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/nccl/nccl_transport.hpp"
#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/aborted.hpp"

namespace gpipe::exec::cuda {
namespace {

using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;

TEST(NcclGpu, WorldOfOneInitializesAndAborts) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  NcclTransport transport(0, 1, 0, make_nccl_ids());
  EXPECT_EQ(transport.world_size(), 1);
  transport.synchronize();
  const MessageTag tag{0, MessageKind::activation, Stage{0}, Microbatch{0}};
  EXPECT_THROW((void)transport.send(Rank{0}, tag, nullptr, 0, nullptr), InputError);  // no self-sends
  transport.abort();
  transport.abort();  // idempotent
  EXPECT_THROW((void)transport.send(Rank{1}, tag, nullptr, 0, nullptr), Aborted);
  transport.finish_abort();
  transport.finish_abort();  // idempotent
}

TEST(NcclGpu, MalformedIds) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  EXPECT_THROW(NcclTransport(0, 1, 0, "short"), InputError);
  EXPECT_THROW(NcclTransport(1, 1, 0, make_nccl_ids()), InputError);
}

TEST(NcclGpu, TwoRanksExchangeActivationAndGradient) {
  if (device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices, have " << device_count();
  constexpr int kN = 1024;
  TcpStore server("127.0.0.1", 0, true, std::chrono::milliseconds(60'000));
  std::vector<std::vector<float>> got(2);
  std::vector<std::string> errors(2);
  const auto run_rank = [&](int rank) {
    try {
      TcpStore client("127.0.0.1", server.port(), false, std::chrono::milliseconds(60'000));
      if (rank == 0) client.set("nccl_ids", make_nccl_ids());
      NcclTransport transport(rank, 2, rank, client.get("nccl_ids"));
      GPIPE_CUDA_CHECK(cudaSetDevice(rank));
      cudaStream_t stream = nullptr;
      GPIPE_CUDA_CHECK(cudaStreamCreate(&stream));
      float* out = nullptr;
      float* in = nullptr;
      GPIPE_CUDA_CHECK(cudaMalloc(&out, kN * sizeof(float)));
      GPIPE_CUDA_CHECK(cudaMalloc(&in, kN * sizeof(float)));
      std::vector<float> mine(kN);
      for (int i = 0; i < kN; ++i) mine[static_cast<std::size_t>(i)] = static_cast<float>(rank * 10000 + i);
      GPIPE_CUDA_CHECK(cudaMemcpy(out, mine.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
      const MessageTag act{0, MessageKind::activation, Stage{0}, Microbatch{0}};
      const MessageTag grad{0, MessageKind::gradient, Stage{1}, Microbatch{0}};
      const Rank peer{1 - rank};
      if (rank == 0) {
        (void)transport.send(peer, act, out, kN * sizeof(float), stream);
        transport.receive(peer, grad, in, kN * sizeof(float));
      } else {
        transport.receive(peer, act, in, kN * sizeof(float));
        (void)transport.send(peer, grad, out, kN * sizeof(float), stream);
      }
      transport.synchronize();
      GPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
      got[static_cast<std::size_t>(rank)].resize(kN);
      GPIPE_CUDA_CHECK(cudaMemcpy(got[static_cast<std::size_t>(rank)].data(), in, kN * sizeof(float),
                                  cudaMemcpyDeviceToHost));
      GPIPE_CUDA_CHECK(cudaFree(out));
      GPIPE_CUDA_CHECK(cudaFree(in));
      GPIPE_CUDA_CHECK(cudaStreamDestroy(stream));
      client.barrier("done", rank, 2);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(rank)] = e.what();
    }
  };
  std::thread other(run_rank, 1);
  run_rank(0);
  other.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    const int peer = 1 - r;
    for (int i = 0; i < kN; i += 97) {
      EXPECT_EQ(got[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)],
                static_cast<float>(peer * 10000 + i));
    }
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
