// The files the argv-level targets' seeds name, written into their scratch
// folder with the libraries themselves: a schedule in both forms (s.json,
// s.csv), an analytic profile (p.json) and its predicted trace (t.json).
#pragma once

#include <vector>

#include "base/files.hpp"
#include "interop/torch_csv.hpp"
#include "models/model_spec.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "profiles/profile.hpp"
#include "schedules/generate.hpp"
#include "schedules/ir_json.hpp"
#include "sim/scenario.hpp"
#include "timelines/chrome_trace.hpp"

namespace gpipe::fuzz {

inline void write_seed_files() {
  using namespace gpipe;
  write_text_file("s.json", schedules::to_json_text(schedules::generate(
                                "1f1b", {.num_ranks = 2, .num_microbatches = 4})));
  write_text_file("s.csv", interop::to_csv(schedules::generate("zbv", {.num_ranks = 2, .num_microbatches = 4})));
  const models::Model model = models::parse_model("transformer:layers=4,hidden=64,heads=4,seq=8");
  const std::vector<int> sizes = {1, 2, 4};
  const profiles::Profile profile =
      profiles::analytic_profile(model, *profiles::find_device("h100"), models::DType::bf16, sizes);
  profiles::write_profile(profile, "p.json");
  sim::Scenario scenario;
  scenario.request.schedule = "1f1b";
  scenario.request.stages = 2;
  scenario.request.microbatches = 4;
  scenario.request.batch = 8;
  timelines::write_chrome_trace(sim::predict(profile, scenario, /*record_timeline=*/true).timeline, "t.json");
}

}  // namespace gpipe::fuzz
