// Grids of plan requests: grid order (M fastest), the fixed fields of the base
// kept, the fields every JSON row starts with, and CSV cell quoting.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan/request_grid.hpp"

namespace gpipe::plan {
namespace {

TEST(RequestGrid, RequestsInGridOrder) {
  RequestGrid g;
  g.stages = {2, 4};
  g.microbatches = {1, 8};
  g.schedules = {"gpipe", "1f1b"};
  g.recompute = {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage};
  g.base.batch = 16;
  g.base.backward_order = schedules::BackwardOrder::forward;
  const std::vector<PlanRequest> all = g.requests();
  ASSERT_EQ(all.size(), 16u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].schedule, i < 8 ? "gpipe" : "1f1b");
    EXPECT_EQ(all[i].recompute,
              (i / 4) % 2 == 0 ? schedules::RecomputePolicy::never : schedules::RecomputePolicy::stage);
    EXPECT_EQ(all[i].stages, (i / 2) % 2 == 0 ? 2 : 4);
    EXPECT_EQ(all[i].microbatches, i % 2 == 0 ? 1 : 8);
    EXPECT_EQ(all[i].batch, 16);
    EXPECT_EQ(all[i].backward_order, schedules::BackwardOrder::forward);
  }
  g.stages.clear();
  EXPECT_TRUE(g.requests().empty());
}

TEST(RequestGrid, RequestAtAnIndexIsTheOneInGridOrder) {
  RequestGrid g;
  g.stages = {1, 2, 3};
  g.microbatches = {4, 5};
  g.schedules = {"gpipe", "interleaved-1f1b"};
  g.stages_per_rank = {0, 2, 3};
  g.recompute = {schedules::RecomputePolicy::never, schedules::RecomputePolicy::stage_except_last};
  g.base.batch = 40;
  std::size_t i = 0;
  for (const std::string& name : g.schedules) {
    for (const int v : g.stages_per_rank) {
      for (const auto policy : g.recompute) {
        for (const int k : g.stages) {
          for (const int m : g.microbatches) {
            const PlanRequest r = g.request(static_cast<std::int64_t>(i));
            EXPECT_EQ(r.schedule, name) << i;
            EXPECT_EQ(r.stages_per_rank, v) << i;
            EXPECT_EQ(r.recompute, policy) << i;
            EXPECT_EQ(r.stages, k) << i;
            EXPECT_EQ(r.microbatches, m) << i;
            EXPECT_EQ(r.batch, 40) << i;
            ++i;
          }
        }
      }
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(i), g.size());
}

TEST(RequestGrid, RowJsonStartsEveryRow) {
  PlanRequest r;
  r.schedule = "1f1b";
  r.recompute = schedules::RecomputePolicy::stage_except_last;
  r.stages = 4;
  r.microbatches = 8;
  r.batch = 32;
  EXPECT_EQ(grid_row_json(r, "").dump(),
            R"({"batch":32,"microbatches":8,"recompute":"stage_except_last","schedule":"1f1b","stages":4,"status":"ok"})");
  EXPECT_EQ(grid_row_json(r, "why").dump(),
            R"({"batch":32,"microbatches":8,"reason":"why","recompute":"stage_except_last","schedule":"1f1b","stages":4,"status":"skipped"})");
}

TEST(RequestGrid, RowCsvQuotesAScheduleFilesName) {
  PlanRequest r;
  r.schedule = "a,b";
  r.stages = 2;
  r.microbatches = 4;
  EXPECT_EQ(grid_row_csv(r, "", 0), "\"a,b\",never,2,,4,");
}

TEST(RequestGrid, CsvCellsQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csv_cell("gpipe"), "gpipe");
  EXPECT_EQ(csv_cell("3,3,2"), "\"3,3,2\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_cell("two\nlines"), "\"two\nlines\"");
}

}  // namespace
}  // namespace gpipe::plan
