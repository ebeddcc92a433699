#include "model/weight_slice.h"

#include <cstring>
#include <string>

#include "backend/cpu/quant_formats.h"

namespace llmhost {

using quant::GgmlBlockSize;
using quant::RowBytes;

namespace {

// Per-row bytes of the scale (and bias) arrays, 0 for a format without them.
int64_t ParamRowBytes(const WeightMatrix& w) {
  if (w.format != WeightFormat::kMlxAffine && w.format != WeightFormat::kFp8E4M3) return 0;
  if (w.group_size <= 0) return 0;
  return w.cols / w.group_size * static_cast<int64_t>(DTypeSize(w.scale_dtype));
}

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

// Lays out data, scales and biases of `rows` rows one after another in *storage.
struct Layout {
  size_t data = 0, scales = 0, biases = 0, total = 0;
};
Layout PlanStorage(int64_t rows, int64_t data_row, int64_t param_row, bool biases) {
  Layout l;
  l.data = 0;
  l.scales = Align64(static_cast<size_t>(rows * data_row));
  l.biases = l.scales + Align64(static_cast<size_t>(rows * param_row));
  l.total = l.biases + (biases ? Align64(static_cast<size_t>(rows * param_row)) : 0);
  return l;
}

const uint8_t* Bytes(const void* p) { return static_cast<const uint8_t*>(p); }

}  // namespace

int64_t ColumnSliceUnit(const WeightMatrix& w) {
  switch (w.format) {
    case WeightFormat::kMlxAffine: return w.group_size;
    case WeightFormat::kFp8E4M3: return w.group_size < w.cols ? w.group_size : 1;
    case WeightFormat::kGgml: return GgmlBlockSize(w.ggml_type);
    default: return 1;
  }
}

Result<WeightMatrix> SliceRows(const WeightMatrix& w, std::span<const RowRange> ranges,
                               std::vector<uint8_t>* storage) {
  int64_t rows = 0;
  for (const RowRange& r : ranges) {
    if (r.begin < 0 || r.end > w.rows || r.begin >= r.end) {
      return Status::InvalidArgument("rows [" + std::to_string(r.begin) + ", " + std::to_string(r.end) +
                                     ") of a matrix of " + std::to_string(w.rows) + " rows");
    }
    rows += r.end - r.begin;
  }
  if (ranges.empty()) return Status::InvalidArgument("no rows to keep");
  const int64_t data_row = RowBytes(w), param_row = ParamRowBytes(w);
  WeightMatrix out = w;
  out.rows = rows;
  if (ranges.size() == 1) {  // a view
    const int64_t r0 = ranges[0].begin;
    out.data = Bytes(w.data) + r0 * data_row;
    if (w.scales) out.scales = Bytes(w.scales) + r0 * param_row;
    if (w.biases) out.biases = Bytes(w.biases) + r0 * param_row;
    return out;
  }
  const Layout l = PlanStorage(rows, data_row, param_row, w.biases != nullptr);
  storage->assign(l.total, 0);
  uint8_t* base = storage->data();
  int64_t at = 0;
  for (const RowRange& r : ranges) {
    const int64_t n = r.end - r.begin;
    std::memcpy(base + l.data + at * data_row, Bytes(w.data) + r.begin * data_row, static_cast<size_t>(n * data_row));
    if (w.scales) {
      std::memcpy(base + l.scales + at * param_row, Bytes(w.scales) + r.begin * param_row,
                  static_cast<size_t>(n * param_row));
    }
    if (w.biases) {
      std::memcpy(base + l.biases + at * param_row, Bytes(w.biases) + r.begin * param_row,
                  static_cast<size_t>(n * param_row));
    }
    at += n;
  }
  out.data = base + l.data;
  out.scales = w.scales ? base + l.scales : nullptr;
  out.biases = w.biases ? base + l.biases : nullptr;
  return out;
}

Result<WeightMatrix> SliceCols(const WeightMatrix& w, int64_t c0, int64_t c1, std::vector<uint8_t>* storage) {
  if (w.col_order) {
    return Status::NotSupported("a matrix stored in act-order (GPTQ desc_act) cannot be split by columns");
  }
  if (c0 < 0 || c1 > w.cols || c0 >= c1) {
    return Status::InvalidArgument("columns [" + std::to_string(c0) + ", " + std::to_string(c1) +
                                   ") of a matrix of " + std::to_string(w.cols) + " columns");
  }
  const int64_t unit = ColumnSliceUnit(w);
  if (unit <= 0 || c0 % unit != 0 || c1 % unit != 0) {
    const char* what = w.format == WeightFormat::kGgml ? "block" : "scale group";
    return Status::InvalidArgument("columns [" + std::to_string(c0) + ", " + std::to_string(c1) + ") do not start and end on a " +
                                   what + " of " + std::to_string(unit) + " columns");
  }
  WeightMatrix part = w;
  part.cols = c1 - c0;
  // One scale for a whole FP8 row (per-channel or per-tensor): it stays the row's one scale.
  const bool one_group = w.format == WeightFormat::kFp8E4M3 && w.group_size >= w.cols;
  if (one_group) part.group_size = static_cast<int>(part.cols);
  const int64_t src_row = RowBytes(w), dst_row = RowBytes(part);
  const int64_t src_param = ParamRowBytes(w), dst_param = ParamRowBytes(part);
  const int64_t data_off = c0 * src_row / w.cols;  // whole units: exact
  const int64_t param_off = one_group || !src_param ? 0 : c0 / w.group_size * static_cast<int64_t>(DTypeSize(w.scale_dtype));
  const Layout l = PlanStorage(w.rows, dst_row, dst_param, w.biases != nullptr);
  storage->assign(l.total, 0);
  uint8_t* base = storage->data();
  for (int64_t r = 0; r < w.rows; ++r) {
    std::memcpy(base + l.data + r * dst_row, Bytes(w.data) + r * src_row + data_off, static_cast<size_t>(dst_row));
    if (w.scales && dst_param) {
      std::memcpy(base + l.scales + r * dst_param, Bytes(w.scales) + r * src_param + param_off,
                  static_cast<size_t>(dst_param));
    }
    if (w.biases && dst_param) {
      std::memcpy(base + l.biases + r * dst_param, Bytes(w.biases) + r * src_param + param_off,
                  static_cast<size_t>(dst_param));
    }
  }
  part.data = base + l.data;
  part.scales = w.scales ? base + l.scales : nullptr;
  part.biases = w.biases ? base + l.biases : nullptr;
  return part;
}

}  // namespace llmhost
