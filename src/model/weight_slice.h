// Parts of a stored weight matrix, in its own format: what one rank of a
// tensor-parallel group keeps (model/tensor_parallel.h).
//
// Rows are whole in every format, so a row slice is exact; a column slice
// must start and end on the format's groups (MLX and FP8 scale groups, GGUF
// blocks), so that each kept value keeps its own scale.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/weight_matrix.h"
#include "util/status.h"

namespace llmhost {

struct RowRange {
  int64_t begin = 0, end = 0;  // [begin, end)
};

// The rows of `ranges`, in that order. One range: a view into w's memory
// (nothing copied); several: a copy into *storage, which the result points
// into and which must outlive it. InvalidArgument for a range outside w.
Result<WeightMatrix> SliceRows(const WeightMatrix& w, std::span<const RowRange> ranges,
                               std::vector<uint8_t>* storage);

// Columns [c0, c1) of every row, copied into *storage. InvalidArgument when
// c0 or c1 falls inside a group or block (the message names the unit);
// NotSupported for a matrix with a column order (act-order GPTQ).
Result<WeightMatrix> SliceCols(const WeightMatrix& w, int64_t c0, int64_t c1, std::vector<uint8_t>* storage);

// The unit columns must be cut at: the scale group (MLX, FP8 with several
// groups a row), the GGUF block, else 1.
int64_t ColumnSliceUnit(const WeightMatrix& w);

}  // namespace llmhost
