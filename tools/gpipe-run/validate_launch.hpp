// What `gpipe-run validate --launcher` starts as processes, each a gpipe-run
// of its own whose command line is made from that command's flags
// (profile_flags.hpp, train_flags.hpp, infer_flags.hpp): a profile measured
// under the launcher, a configuration trained, an inference configuration
// served; and what comes back from each (the profile file, the measured
// trace and JSON).
#pragma once

#include <vector>

#include "exec/inference/serving_request.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/train_options.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"
#include "tools/gpipe-run/validate_flags.hpp"

namespace gpipe::tools {

// The layers and the link between two processes, measured by `gpipe-run
// profile` under the launcher (exec/mpi/link_probe.hpp), so that the
// predictions use the real link; the contention between ranks measured here.
// Says so on stdout when `announce` (and not --json).
[[nodiscard]] profiles::Profile launched_profile(const ValidateFlags& f, const models::Model& model,
                                                 const std::vector<int>& sizes, const exec::OptimizerConfig& optimizer,
                                                 int threads_per_rank, bool announce = true);

// One configuration trained as K x T x D processes under the launcher: the
// plan's schedule and partition handed over as a schedule file and
// --partition, the measured step read back from the trace the reporter writes.
[[nodiscard]] exec::TrainResult launched_training(const ValidateFlags& f, const exec::TrainOptions& t);

// One inference configuration served as K processes under the launcher
// (`gpipe-run infer --json`), its measured run read back from the JSON the
// reporter prints.
[[nodiscard]] exec::inference::ServingResult launched_serving(const ValidateFlags& f,
                                                              const exec::inference::ServingRequest& rq);

}  // namespace gpipe::tools
