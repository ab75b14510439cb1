// exec/runtime/tensor.hpp: charges follow the tensor (moves carry them, frees refund
// them, charge_to moves them between accounts), copies are explicit, and
// misuse throws.
#include "exec/runtime/tensor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "exec/layers/memory_account.hpp"

namespace gpipe::exec {
namespace {

TEST(Tensor, ChargesWhileAliveAndRefundsWhenFreed) {
  MemoryAccount account;
  {
    Tensor t({3, 5}, ElementType::f32, &account);
    EXPECT_EQ(t.numel(), 15);
    EXPECT_EQ(t.bytes(), 60);
    EXPECT_EQ(account.bytes(), 60);
    EXPECT_TRUE(std::ranges::all_of(t.f32(), [](float v) { return v == 0.0F; }));
    Tensor ids({4}, ElementType::i32, &account);
    EXPECT_EQ(account.bytes(), 76);  // int32 counts 4 bytes too
  }
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_EQ(account.peak(), 76);
}

TEST(Tensor, MovesCarryTheCharge) {
  MemoryAccount account;
  Tensor a({2, 2}, ElementType::f32, &account);
  a.f32()[3] = 7.0F;
  Tensor b = std::move(a);
  EXPECT_EQ(account.bytes(), 16);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(b.f32()[3], 7.0F);
  EXPECT_EQ(b.account(), &account);
  Tensor c({10}, ElementType::f32, &account);
  EXPECT_EQ(account.bytes(), 56);
  c = std::move(b);  // c's own 40 bytes are refunded
  EXPECT_EQ(account.bytes(), 16);
  EXPECT_EQ(c.shape(), (std::vector<std::int64_t>{2, 2}));
}

TEST(Tensor, ChargeToMovesBetweenAccounts) {
  MemoryAccount first;
  MemoryAccount second;
  Tensor t({8}, ElementType::f32, &first);
  t.charge_to(&second);
  EXPECT_EQ(first.bytes(), 0);
  EXPECT_EQ(second.bytes(), 32);
  t.charge_to(&second);  // no double charge
  EXPECT_EQ(second.bytes(), 32);
  t.charge_to(nullptr);
  EXPECT_EQ(second.bytes(), 0);
  EXPECT_EQ(t.account(), nullptr);
}

TEST(Tensor, CloneAndSliceRowsCopyAndChargeTheirOwnAccount) {
  MemoryAccount account;
  Tensor t({3, 2}, ElementType::i32);
  for (int i = 0; i < 6; ++i) t.i32()[static_cast<std::size_t>(i)] = i;
  Tensor copy = t.clone(&account);
  EXPECT_EQ(account.bytes(), 24);
  copy.i32()[0] = 100;
  EXPECT_EQ(t.i32()[0], 0);  // a real copy
  Tensor rows = t.slice_rows(1, 2, &account);
  EXPECT_EQ(rows.shape(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(rows.i32()[0], 2);
  EXPECT_EQ(rows.i32()[3], 5);
  EXPECT_EQ(account.bytes(), 40);
  EXPECT_EQ(t.slice_rows(3, 0).numel(), 0);
  EXPECT_TRUE(Tensor().clone().empty());
}

TEST(Tensor, ReshapeKeepsValues) {
  Tensor t({2, 6});
  t.f32()[7] = 1.5F;
  t.reshape({3, 4});
  EXPECT_EQ(t.dim(0), 3);
  EXPECT_EQ(t.f32()[7], 1.5F);
  EXPECT_EQ(t.describe(), "f32[3,4]");
}

TEST(Tensor, MisuseThrows) {
  Tensor f({2});
  Tensor i({2}, ElementType::i32);
  EXPECT_THROW((void)f.i32(), std::logic_error);
  EXPECT_THROW((void)i.f32(), std::logic_error);
  EXPECT_THROW((void)Tensor().f32(), std::logic_error);
  EXPECT_THROW((void)f.slice_rows(1, 2), std::out_of_range);
  EXPECT_THROW((void)f.slice_rows(-1, 1), std::out_of_range);
  EXPECT_THROW(f.reshape({3}), std::invalid_argument);
  EXPECT_THROW(Tensor({2, -1}), std::invalid_argument);
  EXPECT_EQ(Tensor().describe(), "empty tensor");
  EXPECT_EQ(i.describe(), "i32[2]");
}

TEST(MemoryAccount, PeakObserverAndReset) {
  MemoryAccount account;
  std::vector<std::int64_t> seen;
  account.set_observer([&](std::int64_t bytes) { seen.push_back(bytes); });
  {
    Tensor a({4}, ElementType::f32, &account);
    Tensor b({2}, ElementType::f32, &account);
  }
  EXPECT_EQ(seen, (std::vector<std::int64_t>{16, 24, 16, 0}));  // b is freed first
  EXPECT_EQ(account.peak(), 24);
  account.reset_peak();
  EXPECT_EQ(account.peak(), 0);
}

}  // namespace
}  // namespace gpipe::exec
