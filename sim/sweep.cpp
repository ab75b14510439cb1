#include "sim/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace gpipe::sim {
namespace {

SweepRow simulate_row(plan::Planner& planner, const SweepGrid& sweep, std::int64_t index) {
  SweepRow row;
  const Scenario sc{sweep.grid.request(index), sweep.conditions};
  row.request = sc.request;
  try {
    Prediction p = predict(planner, sc, /*record_timeline=*/false);
    row.partition = p.plan.partition.layers_per_stage;
    row.request.stages_per_rank = p.plan.schedule.num_stages / p.plan.schedule.num_ranks;
    row.micro_batch_size = p.plan.microbatch_sizes.front();
    for (const auto& r : p.metrics.ranks) {
      row.peak_activation_bytes = std::max(row.peak_activation_bytes, r.peak_activation_bytes);
      row.static_bytes = std::max(row.static_bytes, r.static_bytes);
      row.peak_memory_bytes = std::max(row.peak_memory_bytes, r.peak_activation_bytes + r.static_bytes);
    }
    row.metrics = std::move(p.metrics);
  } catch (const InputError& e) {
    row.skipped = e.what();
  }
  return row;
}

bool fits(const SweepRow& row, std::optional<std::int64_t> limit) {
  return !limit || row.peak_memory_bytes <= *limit;
}

std::string fits_cell(const SweepRow& row, std::optional<std::int64_t> limit) {
  if (!limit || !row.ok()) return "";
  return fits(row, limit) ? "1" : "0";
}

double min_utilization(const timelines::Metrics& m) {
  double u = m.ranks.empty() ? 0.0 : 1.0;
  for (const auto& r : m.ranks) u = std::min(u, r.utilization);
  return u;
}

}  // namespace

void stream_sweep(const profiles::Profile& profile, const SweepGrid& sweep, int threads, const SweepSink& sink,
                  const SweepProgress& progress) {
  using Clock = std::chrono::steady_clock;
  const auto total = static_cast<std::size_t>(sweep.grid.size());
  const auto workers = static_cast<std::size_t>(std::max(1, threads));
  // Done rows wait in a ring for their turn in grid order: row i in slot
  // i % window once row i - window has gone to the sink. A few hundred rows
  // per worker keep the workers from waiting on a sink that writes in bursts.
  const std::size_t window = 256 * workers;
  std::vector<SweepRow> ring(window);
  std::vector<std::atomic<std::uint32_t>> done(window);  // 1 when the slot's row is done (a futex word)
  // What a row threw beyond the InputError that skips it (a stall, memory):
  // rethrown on the calling thread in its turn, as a single thread would.
  std::vector<std::exception_ptr> failed(window);
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> handed{0};  // rows given to the sink
  std::atomic<bool> cancelled{false};  // the sink or the progress threw: workers stop
  const auto work = [&] {
    plan::Planner planner(profile);  // what this worker's plans share
    for (std::size_t i = next++; i < total; i = next++) {
      for (std::size_t h = handed.load(std::memory_order_acquire); i >= h + window;
           h = handed.load(std::memory_order_acquire)) {
        if (cancelled) return;
        handed.wait(h, std::memory_order_acquire);
      }
      if (cancelled) return;
      try {
        ring[i % window] = simulate_row(planner, sweep, static_cast<std::int64_t>(i));
      } catch (...) {
        failed[i % window] = std::current_exception();
      }
      done[i % window].store(1, std::memory_order_release);
      done[i % window].notify_one();
    }
  };
  std::vector<std::jthread> pool;
  // Joined after this guard wakes any worker that waits for room.
  struct WakeOnExit {
    std::atomic<bool>& cancelled;
    std::atomic<std::size_t>& handed;
    ~WakeOnExit() {
      cancelled = true;
      handed.fetch_add(1);
      handed.notify_all();
    }
  };
  for (std::size_t t = 0; t < std::min(workers, total); ++t) pool.emplace_back(work);
  const WakeOnExit wake{cancelled, handed};
  auto reported = Clock::now();
  if (progress) progress(0, total);
  // This thread sleeps until a run of rows is done rather than until the
  // next one is: a wake-up per row cost a one-worker sweep a tenth of its
  // time in the kernel. (Row i + kRun - 1 is within the window, so no worker
  // waits for room while this thread waits for it.)
  constexpr std::size_t kRun = 64;
  for (std::size_t i = 0; i < total; ++i) {
    std::atomic<std::uint32_t>& ready = done[i % window];
    if (ready.load(std::memory_order_acquire) == 0) {
      done[(std::min(i + kRun, total) - 1) % window].wait(0, std::memory_order_acquire);
      ready.wait(0, std::memory_order_acquire);  // should another worker still have row i
    }
    if (failed[i % window]) std::rethrow_exception(failed[i % window]);
    SweepRow row = std::move(ring[i % window]);
    ready.store(0, std::memory_order_relaxed);
    handed.store(i + 1, std::memory_order_release);
    handed.notify_all();
    sink(std::move(row));
    if (progress && Clock::now() - reported >= std::chrono::milliseconds(100)) {
      progress(i + 1, total);
      reported = Clock::now();
    }
  }
  if (progress) progress(total, total);
}

std::vector<SweepRow> run_sweep(const profiles::Profile& profile, const SweepGrid& sweep, int threads,
                                const SweepProgress& progress) {
  std::vector<SweepRow> rows;
  rows.reserve(static_cast<std::size_t>(sweep.grid.size()));
  stream_sweep(profile, sweep, threads, [&rows](SweepRow&& row) { rows.push_back(std::move(row)); }, progress);
  return rows;
}

std::string sweep_csv_head() {
  return std::string(plan::kGridCsvHead) +
         ",step_time_us,bubble_fraction,bubble_fraction_analytic,bubble_time_over_ideal,"
         "throughput_samples_per_s,utilization_min,peak_activation_bytes,static_bytes,"
         "peak_memory_bytes,fits\n";
}

std::string sweep_csv_row(const SweepRow& r, std::optional<std::int64_t> memory_limit) {
  const plan::PlanRequest& req = r.request;
  std::string out = plan::grid_row_csv(req, r.skipped, 10);
  if (!r.ok()) return out;
  const auto& m = r.metrics;
  out += fmt::format("{},{},{},ok,,{:.3f},{:.6f},{},{:.6f},{:.3f},{:.6f},{},{},{},{}\n",
                     r.micro_batch_size, req.batch, plan::csv_cell(fmt::format("{}", fmt::join(r.partition, ","))),
                     m.step_time_us, m.bubble_fraction, plan::csv_number(m.bubble_fraction_analytic, 6),
                     m.bubble_time_over_ideal, m.throughput_samples_per_s, min_utilization(m),
                     r.peak_activation_bytes, r.static_bytes, r.peak_memory_bytes, fits_cell(r, memory_limit));
  return out;
}

std::string sweep_csv(const std::vector<SweepRow>& rows, std::optional<std::int64_t> memory_limit) {
  std::string out = sweep_csv_head();
  for (const SweepRow& r : rows) out += sweep_csv_row(r, memory_limit);
  return out;
}

nlohmann::json sweep_json_row(const SweepRow& r, std::optional<std::int64_t> memory_limit) {
  nlohmann::json row = plan::grid_row_json(r.request, r.skipped);
  if (r.ok()) {
    row["micro_batch_size"] = r.micro_batch_size;
    row["partition"] = r.partition;
    row["metrics"] = timelines::to_json(r.metrics);
    row["peak_memory_bytes"] = r.peak_memory_bytes;
    if (memory_limit) row["fits"] = fits(r, memory_limit);
  }
  return row;
}

nlohmann::json sweep_json(const std::vector<SweepRow>& rows, std::optional<std::int64_t> memory_limit) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepRow& r : rows) out.push_back(sweep_json_row(r, memory_limit));
  return out;
}

std::vector<const SweepRow*> best_per_stage_count(const std::vector<SweepRow>& rows,
                                                  std::optional<std::int64_t> memory_limit) {
  std::map<int, const SweepRow*> best;
  for (const SweepRow& r : rows) {
    if (!r.ok() || !fits(r, memory_limit)) continue;
    const SweepRow*& b = best[r.request.stages];
    if (b == nullptr || r.metrics.throughput_samples_per_s > b->metrics.throughput_samples_per_s) b = &r;
  }
  std::vector<const SweepRow*> out;
  for (const auto& [k, row] : best) out.push_back(row);
  return out;
}

void BestPerStageCount::offer(const SweepRow& r) {
  if (!r.ok() || !fits(r, memory_limit_)) return;
  const auto it = best_.find(r.request.stages);
  if (it == best_.end()) {
    best_.emplace(r.request.stages, r);
  } else if (r.metrics.throughput_samples_per_s > it->second.metrics.throughput_samples_per_s) {
    it->second = r;
  }
}

std::vector<const SweepRow*> BestPerStageCount::rows() const {
  std::vector<const SweepRow*> out;
  for (const auto& [k, row] : best_) out.push_back(&row);
  return out;
}

}  // namespace gpipe::sim
