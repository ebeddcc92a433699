// Each logits row's next token picked on the device, by cpu::RowDraw's rules
// (temperature, top_k, top_p, min_p, the draw at RowPick::u), so that a step
// sends back ids instead of whole vocabulary rows. Masses are summed in
// fixed point, so a row's token depends on that row and its RowPick alone:
// the same bits whatever the batch, the grid or the timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/row_pick.h"

namespace llmhost::cuda {

// out[r] = the token row r of x[rows, cols] gives under picks[r] (device
// memory, RowPick), always an id in [0, cols). top_k at most kMaxPickTopK;
// cols below 2^24 (the fixed-point masses' headroom).
void LaunchPickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out, cudaStream_t s);

}  // namespace llmhost::cuda
