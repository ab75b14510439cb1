// The schedule IR's CSV form, torch.distributed.pipelining's layout: one line
// per rank, one action per cell ("0F0,0SEND_F0,0F1,..."), no header. PyTorch
// 2.15's whole grammar reads: every kind of action.hpp (BW read as B), empty
// cells (torch's idle slots) and composites `(0F3;3B1)OVERLAP_F_B`
// (overlap.hpp), which are also written back as such.
//
// The CSV carries no metadata, so reading infers it: ranks = lines, stages and
// micro-batches from the largest indices, stage_to_rank from the line each
// stage sits on, and the recompute policy from the R actions (none: never; one
// per backward: stage; some: stage_except_last). A compute-only CSV therefore reads
// back with recompute `never`.
#pragma once

#include <string>
#include <string_view>

#include "schedules/schedule.hpp"

namespace gpipe::interop {

[[nodiscard]] std::string to_csv(const schedules::Schedule& schedule);

// Throws InputError naming `origin`, the line and the cell at fault.
[[nodiscard]] schedules::Schedule schedule_from_csv(std::string_view text, std::string_view origin,
                                         std::string_view name);

}  // namespace gpipe::interop
