// Reading CUPTI's activity records into our plain records. CUPTI's record
// structs are versioned (CUDA 13's cupti.h declares CUpti_ActivityKernel10,
// CUpti_ActivityMemcpy6, CUpti_ActivityAPI, CUpti_ActivityExternalCorrelation,
// CUpti_ActivityMemset4); this is the one place that knows them. It touches no driver, so tests feed
// it hand-made CUPTI structs.
#pragma once

#include <cupti.h>

#include "exec/cuda/cupti/activity_record.hpp"

namespace gpipe::exec::cuda::cupti {

// Appends the record to `out` by its kind (kernel, memcpy, memset, runtime or
// driver API, external correlation); counts any other kind in out.other_kinds.
void append_record(const CUpti_Activity& record, ActivityRecords& out);

[[nodiscard]] MemcpyKind memcpy_kind_of(std::uint8_t cupti_copy_kind);

}  // namespace gpipe::exec::cuda::cupti
