// What `gpipe-run validate` prints of a training grid: a row per
// configuration as it finishes (predicted against measured step time, its
// noise band, bubble and peak activation), then the summary: the step time's
// error over the rows and over those whose band is quiet, the bubble's, the
// peaks', the link model's and the collectives'.
#pragma once

#include <vector>

#include "calibration/calibration.hpp"

namespace gpipe::tools {

void print_table_header();
void print_row(const calibration::CalibrationRow& row);
// `tensor_parallel` x `context_parallel`: the processes of each rank, for the
// rows that fit this machine's hardware threads.
void print_summary(const std::vector<calibration::CalibrationRow>& rows, int tensor_parallel, int context_parallel);

}  // namespace gpipe::tools
