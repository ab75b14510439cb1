// The StoragePool behind every CPU tensor: a freed block is handed out again
// for the next request of its size, the blocks kept never outweigh the peak in
// use, and trim() gives them all back.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/runtime/storage_pool.hpp"
#include "exec/runtime/tensor.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

// Sizes no other test of this program allocates, so the counts are this test's.
constexpr std::size_t kWords = 1234567;

TEST(StoragePool, AFreedBlockServesTheNextRequestOfItsSize) {
  StoragePool& pool = StoragePool::instance();
  pool.trim();
  const StoragePool::Stats before = pool.stats();
  std::uint32_t* first = pool.take(kWords);
  pool.give_back(first, kWords);
  std::uint32_t* again = pool.take(kWords);
  EXPECT_EQ(again, first);
  std::uint32_t* other = pool.take(kWords + 1);  // another size: a new block
  EXPECT_NE(other, first);
  const StoragePool::Stats after = pool.stats();
  EXPECT_EQ(after.requests - before.requests, 3);
  EXPECT_EQ(after.reused - before.reused, 1);
  pool.give_back(again, kWords);
  pool.give_back(other, kWords + 1);
  EXPECT_EQ(pool.stats().in_use_bytes, before.in_use_bytes);
}

TEST(StoragePool, KeptBlocksNeverOutweighThePeakInUse) {
  StoragePool& pool = StoragePool::instance();
  pool.trim();
  const std::int64_t base = pool.stats().in_use_bytes;
  std::vector<std::uint32_t*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.take(kWords + 10 + static_cast<std::size_t>(i)));
  for (int i = 0; i < 4; ++i) pool.give_back(blocks[static_cast<std::size_t>(i)], kWords + 10 + static_cast<std::size_t>(i));
  StoragePool::Stats s = pool.stats();
  EXPECT_LE(s.kept_bytes, s.peak_in_use_bytes);
  EXPECT_EQ(s.kept_bytes, s.peak_in_use_bytes - base);  // all four kept: they fit under the peak
  pool.trim();
  s = pool.stats();
  EXPECT_EQ(s.kept_bytes, 0);
  EXPECT_EQ(s.peak_in_use_bytes, s.in_use_bytes);
  // One block at a time, each of a new size: the first is kept, and the next
  // would take the kept bytes past the peak (base + its own size, unless the
  // bytes already in use, base, make room), so it goes back to the heap.
  std::uint32_t* small = pool.take(kWords + 20);
  pool.give_back(small, kWords + 20);
  EXPECT_EQ(pool.stats().kept_bytes, static_cast<std::int64_t>(kWords + 20) * 4);
  std::uint32_t* large = pool.take(kWords + 21);
  pool.give_back(large, kWords + 21);
  s = pool.stats();
  const std::int64_t small_bytes = static_cast<std::int64_t>(kWords + 20) * 4;
  EXPECT_EQ(s.kept_bytes, small_bytes + (small_bytes <= base ? small_bytes + 4 : 0));
  EXPECT_LE(s.kept_bytes, s.peak_in_use_bytes);
}

TEST(StoragePool, TensorsAreZeroedUnlessAskedNotToBeAndFreedAcrossThreads) {
  StoragePool::instance().trim();
  {
    Tensor t({kWords + 30});
    std::fill(t.data(), t.data() + t.numel(), 7.0F);
  }
  const Tensor again({kWords + 30});  // the same block, zeroed again
  for (const float v : again.f32()) ASSERT_EQ(v, 0.0F);
  Tensor sent = Tensor::uninitialized({kWords + 40});
  EXPECT_EQ(sent.numel(), static_cast<std::int64_t>(kWords + 40));
  std::thread([t = std::move(sent)]() mutable { t = Tensor(); }).join();  // freed by another thread
  EXPECT_EQ(StoragePool::instance().stats().in_use_bytes, again.bytes());
}

// "No allocation inside a step once the first step has run": a
// one-rank run (one thread, so the same order every step) of 3 steps takes no
// more new blocks from the heap than a run of 1 step; steps 2 and 3 reuse
// what step 1 gave back.
TEST(StoragePool, AfterTheFirstStepEveryTensorIsAReusedBlock) {
  trainer_test::RunConfig c;
  c.model = "transformer:layers=2,hidden=32,heads=2,seq=8";
  c.batch = 4;
  StoragePool& pool = StoragePool::instance();
  const auto blocks_from_heap = [&](int steps) {
    c.steps = steps;
    pool.trim();
    const StoragePool::Stats before = pool.stats();
    (void)cpu::train(trainer_test::options_for(c));
    const StoragePool::Stats after = pool.stats();
    return std::pair{after.requests - before.requests, (after.requests - after.reused) - (before.requests - before.reused)};
  };
  const auto [requests_1, new_1] = blocks_from_heap(1);
  const auto [requests_3, new_3] = blocks_from_heap(3);
  EXPECT_GT(requests_3, requests_1 + 100);  // steps 2 and 3 do ask for tensors
  EXPECT_EQ(new_3, new_1);
}

}  // namespace
}  // namespace gpipe::exec
