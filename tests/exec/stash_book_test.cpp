// StashBook (exec/runtime/stash_book.hpp), the per-micro-batch stash state
// machine of a stage: nothing -> everything (F) -> boundary (drop after F when
// R follows) -> R takes the boundary out and F's fill makes it everything
// again -> nothing (B consumed it), or -> weight_stash (I left what W needs)
// -> nothing (W consumed it). A call that finds another state is a
// logic error naming the action, the micro-batch and what it found; the bytes
// charged to the rank's account follow every transition exactly.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/layers/layer.hpp"
#include "exec/layers/memory_account.hpp"
#include "exec/runtime/stash_book.hpp"
#include "exec/runtime/tensor.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec {
namespace {

using Book = StashBook<Stash<Tensor>>;
using Kept = Book::Kept;

// f32 [rows, 4] filled with `value`, charged to `account`: 16 rows bytes.
Tensor filled_rows(std::int64_t rows, float value, MemoryAccount* account) {
  Tensor t({rows, 4}, ElementType::f32, account);
  for (float& v : t.f32()) v = value;
  return t;
}

// What F of a two-layer stage keeps: layer 0 its input (f32 [2,4], 32 bytes)
// and a hidden (f32 [4,4], 64 bytes); layer 1 its input (32 bytes).
void forward(Book& book, int microbatch, Tensor input, MemoryAccount& account) {
  auto& stash = book.fill(microbatch);
  stash.at(0).tensors.push_back(std::move(input));
  stash.at(0).tensors.push_back(filled_rows(4, -1, &account));
  stash.at(1).tensors.push_back(filled_rows(2, -2, &account));
}

using gpipe::testing::logic_error_of;

TEST(StashBook, FollowsFAndDropAndRAndBWithExactBytes) {
  MemoryAccount account;
  Book book(2, 2);
  EXPECT_NO_THROW((void)book.expect(0, Kept::nothing, "F"));

  forward(book, 0, filled_rows(2, 1.5F, &account), account);
  EXPECT_EQ(account.bytes(), 128);
  EXPECT_EQ(book.expect(0, Kept::everything, "B").at(0).bytes(), 96);

  book.keep_boundary(0);  // the input of layer 0 only: 32 bytes
  EXPECT_EQ(account.bytes(), 32);
  const auto& kept = book.expect(0, Kept::boundary, "R");
  ASSERT_EQ(kept.size(), 2U);
  ASSERT_EQ(kept.at(0).tensors.size(), 1U);
  EXPECT_EQ(kept.at(0).tensors.at(0).shape(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(kept.at(0).tensors.at(0).f32()[0], 1.5F);
  EXPECT_EQ(kept.at(1).tensors.size(), 0U);

  Tensor input = book.take_boundary(0);  // R runs the forward again from it
  EXPECT_EQ(input.f32()[7], 1.5F);
  EXPECT_EQ(account.bytes(), 32);  // still charged: it is the input R computes from
  forward(book, 0, std::move(input), account);
  EXPECT_EQ(account.bytes(), 128);
  EXPECT_NO_THROW((void)book.expect(0, Kept::everything, "B"));

  {
    std::vector<Stash<Tensor>> consumed = std::move(book.expect(0, Kept::everything, "B"));
    book.consumed(0);
  }  // B frees what it consumed
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_NO_THROW((void)book.expect(0, Kept::nothing, "F"));
  EXPECT_EQ(account.peak(), 128);
}

TEST(StashBook, ConsumedFreesWhatIsStillInTheStash) {
  MemoryAccount account;
  Book book(1, 2);
  forward(book, 0, filled_rows(2, 1, &account), account);
  EXPECT_EQ(account.bytes(), 128);
  book.consumed(0);
  EXPECT_EQ(account.bytes(), 0);
}

TEST(StashBook, MicroBatchesAreIndependent) {
  MemoryAccount account;
  Book book(3, 2);
  forward(book, 0, filled_rows(2, 0, &account), account);
  forward(book, 2, filled_rows(2, 2, &account), account);
  book.keep_boundary(2);
  EXPECT_EQ(account.bytes(), 128 + 32);
  EXPECT_NO_THROW((void)book.expect(0, Kept::everything, "B"));
  EXPECT_NO_THROW((void)book.expect(1, Kept::nothing, "F"));
  EXPECT_NO_THROW((void)book.expect(2, Kept::boundary, "R"));
  EXPECT_EQ(book.take_boundary(2).f32()[0], 2.0F);
  EXPECT_EQ(account.bytes(), 128);
}

TEST(StashBook, AWrongStateIsALogicErrorNamingTheActionAndWhatItFound) {
  MemoryAccount account;
  Book book(2, 2);
  EXPECT_EQ(logic_error_of([&] { (void)book.expect(1, Kept::everything, "B"); }),
            "B of micro-batch 1 found nothing kept");
  EXPECT_EQ(logic_error_of([&] { (void)book.take_boundary(1); }), "R of micro-batch 1 found nothing kept");
  EXPECT_EQ(logic_error_of([&] { book.keep_boundary(1); }),
            "dropping the stash of micro-batch 1 found nothing kept");

  forward(book, 1, filled_rows(2, 0, &account), account);
  EXPECT_EQ(logic_error_of([&] { (void)book.expect(1, Kept::nothing, "F"); }),
            "F of micro-batch 1 found the full stash kept");
  EXPECT_EQ(logic_error_of([&] { (void)book.take_boundary(1); }), "R of micro-batch 1 found the full stash kept");

  book.keep_boundary(1);
  EXPECT_EQ(logic_error_of([&] { (void)book.expect(1, Kept::everything, "B"); }),
            "B of micro-batch 1 found the input only kept");
  EXPECT_EQ(logic_error_of([&] { book.keep_boundary(1); }),
            "dropping the stash of micro-batch 1 found the input only kept");
  EXPECT_EQ(account.bytes(), 32);  // a refused call changes nothing
}

// A split backward: I consumes the full stash and leaves, per layer, what W
// needs (here 16 bytes for layer 0, nothing for layer 1); W consumes that.
TEST(StashBook, IHoldsTheWeightStashesUntilWConsumesThem) {
  MemoryAccount account;
  Book book(2, 2);
  forward(book, 1, filled_rows(2, 0, &account), account);
  EXPECT_EQ(logic_error_of([&] { (void)book.expect(1, Kept::weight_stash, "W"); }),
            "W of micro-batch 1 found the full stash kept");
  {
    std::vector<Stash<Tensor>> consumed = std::move(book.expect(1, Kept::everything, "I"));
    std::vector<Stash<Tensor>> weight(2);
    weight[0].tensors.push_back(filled_rows(1, 3, &account));
    book.hold_for_weight(1, std::move(weight));
  }  // I frees the stash it consumed
  EXPECT_EQ(account.bytes(), 16);
  EXPECT_EQ(logic_error_of([&] { (void)book.expect(1, Kept::everything, "I"); }),
            "I of micro-batch 1 found the weight-gradient stash kept");
  EXPECT_EQ(logic_error_of([&] { book.hold_for_weight(1, std::vector<Stash<Tensor>>(2)); }),
            "I of micro-batch 1 found the weight-gradient stash kept");
  EXPECT_EQ(logic_error_of([&] { (void)book.expect(1, Kept::nothing, "F"); }),
            "F of micro-batch 1 found the weight-gradient stash kept");
  const auto& weight = book.expect(1, Kept::weight_stash, "W");
  ASSERT_EQ(weight.size(), 2U);
  EXPECT_EQ(weight[0].tensors.at(0).f32()[0], 3.0F);
  EXPECT_TRUE(weight[1].tensors.empty());
  book.consumed(1);
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_NO_THROW((void)book.expect(1, Kept::nothing, "F"));

  forward(book, 0, filled_rows(2, 0, &account), account);
  EXPECT_EQ(logic_error_of([&] { book.hold_for_weight(0, std::vector<Stash<Tensor>>(3)); }),
            "I of micro-batch 0: 3 weight-gradient stashes for 2 layers");
}

TEST(StashBook, AMicroBatchOutOfRangeIsNamed) {
  Book book(2, 1);
  try {
    (void)book.expect(2, Kept::nothing, "F");
    FAIL() << "no error";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "F: no micro-batch 2");
  }
  try {
    book.keep_boundary(-1);
    FAIL() << "no error";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "dropping the stash: no micro-batch -1");
  }
}

}  // namespace
}  // namespace gpipe::exec
