// GPTQ / AWQ codes repacked into MLX affine rows; FP8 scales laid out per row.
#include "model/quant_repack.h"

#include <cstring>
#include <algorithm>
#include <functional>
#include <numeric>

#include "backend/cpu/matmul.h"

namespace llmhost {
namespace {

std::string Shape(const std::vector<int64_t>& s) { return ShapeToString(s); }

Status Mismatch(const std::string& name, const std::vector<int64_t>& expected, const std::vector<int64_t>& found) {
  return Status::InvalidArgument("tensor '" + name + "': expected shape " + Shape(expected) + ", found " +
                                 Shape(found));
}

Status Expect(const TensorView& t, const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  if (t.dtype != dtype) {
    return Status::InvalidArgument("tensor '" + name + "': dtype " + DTypeName(t.dtype) + ", expected " +
                                   DTypeName(dtype));
  }
  if (t.shape != shape) return Mismatch(name, shape, t.shape);
  return Status::OK();
}

uint32_t Word(const TensorView& t, int64_t i) {
  uint32_t v;
  std::memcpy(&v, t.data + 4 * i, 4);
  return v;
}

// Element i of a float tensor (F32, F16 or BF16) as f32.
float FloatAt(const TensorView& t, int64_t i) {
  uint16_t h;
  switch (t.dtype) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, t.data + 4 * i, 4);
      return f;
    }
    case DType::kF16:
      std::memcpy(&h, t.data + 2 * i, 2);
      return F16ToF32(h);
    default:
      std::memcpy(&h, t.data + 2 * i, 2);
      return Bf16ToF32(h);
  }
}

Status ExpectFloat(const TensorView& t, const std::string& name, const std::vector<int64_t>& shape) {
  if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16) {
    return Status::InvalidArgument("tensor '" + name + "': dtype " + DTypeName(t.dtype) +
                                   ", expected F16, BF16 or F32");
  }
  if (t.shape != shape) return Mismatch(name, shape, t.shape);
  return Status::OK();
}

// The MLX group size for checkpoint groups of `group` columns: the largest
// of 128, 64, 32 dividing both it and cols (0 if none).
int MlxGroup(int64_t group, int64_t cols) {
  for (int g : {128, 64, 32}) {
    if (group % g == 0 && cols % g == 0) return g;
  }
  return 0;
}


std::string GroupText(int64_t g) { return std::to_string(g) + "-column groups"; }

// An MLX affine matrix of rows x cols at `bits` for a checkpoint's groups of
// `group` columns (MLX groups of 128, 64 or 32 inside them), its buffers
// sized, codes zeroed. NotSupported naming `what` when no MLX group fits.
Result<std::unique_ptr<RepackedMatrix>> NewAffine(const std::string& what, int64_t rows, int64_t cols, int bits,
                                                  int64_t group) {
  const int mlx_group = MlxGroup(group, cols);
  if (mlx_group == 0) {
    return Status::NotSupported(what + ": " + GroupText(group) + " over " + std::to_string(cols) +
                                " columns: groups must be a multiple of 32 columns");
  }
  auto m = std::make_unique<RepackedMatrix>();
  m->codes.assign(static_cast<size_t>(rows * cols * bits / 32), 0);
  m->scales.resize(static_cast<size_t>(rows * (cols / mlx_group)));
  m->biases.resize(m->scales.size());
  WeightMatrix& v = m->view;
  v.format = WeightFormat::kMlxAffine;
  v.rows = rows;
  v.cols = cols;
  v.bits = bits;
  v.group_size = mlx_group;
  v.scale_dtype = DType::kF32;
  v.data = m->codes.data();
  v.scales = m->scales.data();
  v.biases = m->biases.data();
  return m;
}

// Act-order: stored column j of every row takes input column order[j]'s code
// (code(n, k)), and the matrix keeps the order for its MatMuls.
template <typename CodeFn>
void PlaceInOrder(RepackedMatrix* m, std::vector<int32_t> order, CodeFn code) {
  const WeightMatrix& v = m->view;
  const int per = 32 / v.bits;
  const int64_t words = v.cols / per;
  for (int64_t n = 0; n < v.rows; ++n) {
    for (int64_t j = 0; j < v.cols; ++j) {
      m->codes[static_cast<size_t>(n * words + j / per)] |= code(n, order[static_cast<size_t>(j)]) << (v.bits * (j % per));
    }
  }
  m->order = std::move(order);
  m->view.col_order = m->order.data();
}

// Fills the MLX scales and biases: MLX group m of row n takes checkpoint
// group m * mlx_group / group's scale s and zero z (zero(g, n), scale(g, n)).
template <typename ZeroFn, typename ScaleFn>
void FillParams(RepackedMatrix* m, int64_t group, ZeroFn zero, ScaleFn scale) {
  const WeightMatrix& v = m->view;
  const int64_t mgroups = v.cols / v.group_size;
  for (int64_t n = 0; n < v.rows; ++n) {
    for (int64_t j = 0; j < mgroups; ++j) {
      const int64_t g = j * v.group_size / group;
      const float s = scale(g, n);
      const float sz = s * static_cast<float>(zero(g, n));
      m->scales[static_cast<size_t>(n * mgroups + j)] = s;
      m->biases[static_cast<size_t>(n * mgroups + j)] = -sz;
    }
  }
}

// An activation order: g_idx (int32 [cols], each input column's group) as
// the stored columns' input columns, the inputs sorted by group (stable) so
// that each group's columns lie together; empty when the groups are already
// in input order (or there is no g_idx).
Result<std::vector<int32_t>> ActOrder(const TensorView* g_idx, const std::string& name, int64_t cols, int64_t group,
                                      int64_t groups) {
  std::vector<int32_t> order;
  if (g_idx == nullptr) return order;
  RETURN_IF_ERROR(Expect(*g_idx, name, DType::kI32, {cols}));
  bool in_order = true;
  std::vector<int64_t> members(static_cast<size_t>(groups), 0);
  for (int64_t k = 0; k < cols; ++k) {
    const int32_t g = static_cast<int32_t>(Word(*g_idx, k));
    if (g < 0 || g >= groups) {
      return Status::InvalidArgument("tensor '" + name + "': entry " + std::to_string(k) + " is group " +
                                     std::to_string(g) + " of " + std::to_string(groups));
    }
    in_order = in_order && g == k / group;
    ++members[static_cast<size_t>(g)];
  }
  if (in_order) return order;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t want = std::min<int64_t>(group, cols - g * group);
    if (members[static_cast<size_t>(g)] != want) {
      return Status::InvalidArgument("tensor '" + name + "': group " + std::to_string(g) + " has " +
                                     std::to_string(members[static_cast<size_t>(g)]) + " columns, not " +
                                     std::to_string(want));
    }
  }
  order.resize(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return Word(*g_idx, a) < Word(*g_idx, b); });
  return order;
}


}  // namespace

Result<std::unique_ptr<RepackedMatrix>> RepackGptq(const HfQuantization& q, const std::string& module,
                                                   const TensorView& qweight, const TensorView& qzeros,
                                                   const TensorView& scales, const TensorView* g_idx, int64_t rows,
                                                   int64_t cols) {
  const int bits = q.bits, per = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  if (cols % per != 0 || rows % per != 0) {
    return Status::InvalidArgument("'" + module + "': a " + std::to_string(rows) + "x" + std::to_string(cols) +
                                   " matrix cannot hold GPTQ " + std::to_string(bits) + "-bit words");
  }
  const int64_t group = q.group_size > 0 ? q.group_size : cols;
  const int64_t groups = (cols + group - 1) / group;
  RETURN_IF_ERROR(Expect(qweight, module + ".qweight", DType::kI32, {cols / per, rows}));
  RETURN_IF_ERROR(Expect(qzeros, module + ".qzeros", DType::kI32, {groups, rows / per}));
  RETURN_IF_ERROR(ExpectFloat(scales, module + ".scales", {groups, rows}));
  // Act-order: the stored column j of each row is input column order[j].
  ASSIGN_OR_RETURN(std::vector<int32_t> order, ActOrder(g_idx, module + ".g_idx", cols, group, groups));
  ASSIGN_OR_RETURN(auto m, NewAffine("'" + module + "': GPTQ", rows, cols, bits, group));
  // Word i of qweight's column n holds input rows i * per .. i * per + per - 1
  // in rising bit fields: MLX's word i of row n. A transpose; in act-order,
  // code by code into the stored columns.
  const int64_t words = cols / per;
  if (order.empty()) {
    // 16 outputs (one cache line of a qweight row) at a time: the reads use
    // whole lines, the writes run along 16 rows.
    for (int64_t n0 = 0; n0 < rows; n0 += 16) {
      const int64_t n1 = std::min(rows, n0 + 16);
      for (int64_t i = 0; i < words; ++i) {
        for (int64_t n = n0; n < n1; ++n) m->codes[static_cast<size_t>(n * words + i)] = Word(qweight, i * rows + n);
      }
    }
  } else {
    PlaceInOrder(m.get(), std::move(order), [&](int64_t n, int64_t k) {
      return (Word(qweight, (k / per) * rows + n) >> (bits * (k % per))) & mask;
    });
  }
  const uint32_t offset = q.zeros_minus_one ? 1 : 0;
  FillParams(
      m.get(), group,
      [&](int64_t g, int64_t n) {
        return ((Word(qzeros, g * (rows / per) + n / per) >> (bits * (n % per))) & mask) + offset;
      },
      [&](int64_t g, int64_t n) { return FloatAt(scales, g * rows + n); });
  return m;
}

Result<std::unique_ptr<RepackedMatrix>> RepackAwq(const HfQuantization& q, const std::string& module,
                                                  const TensorView& qweight, const TensorView& qzeros,
                                                  const TensorView& scales, int64_t rows, int64_t cols) {
  // Nibble p of a word holds column 8 * word + kOrder[p].
  static constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  static constexpr int kNibbleOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // its inverse
  const int64_t group = q.group_size > 0 ? q.group_size : cols;
  if (rows % 8 != 0 || cols % 8 != 0 || cols % group != 0) {
    return Status::InvalidArgument("'" + module + "': a " + std::to_string(rows) + "x" + std::to_string(cols) +
                                   " matrix cannot hold AWQ words of " + GroupText(group));
  }
  const int64_t groups = cols / group;
  RETURN_IF_ERROR(Expect(qweight, module + ".qweight", DType::kI32, {cols, rows / 8}));
  RETURN_IF_ERROR(Expect(qzeros, module + ".qzeros", DType::kI32, {groups, rows / 8}));
  RETURN_IF_ERROR(ExpectFloat(scales, module + ".scales", {groups, rows}));
  ASSIGN_OR_RETURN(auto m, NewAffine("'" + module + "': AWQ", rows, cols, 4, group));
  // An 8 x 8 nibble transpose per (8 inputs, 8 outputs): the words of inputs
  // 8kw .. 8kw + 7 at output word nw give output rows 8nw + kOrder[p] their
  // word kw. 16 output words (a cache line) at a time, so that the reads use
  // whole lines and the writes run along 128 rows.
  const int64_t words = cols / 8, out_words = rows / 8;
  for (int64_t nw0 = 0; nw0 < out_words; nw0 += 16) {
    const int64_t nw1 = std::min(out_words, nw0 + 16);
    for (int64_t kw = 0; kw < words; ++kw) {
      for (int64_t nw = nw0; nw < nw1; ++nw) {
        uint32_t in[8];
        for (int j = 0; j < 8; ++j) in[j] = Word(qweight, (8 * kw + j) * out_words + nw);
        for (int p = 0; p < 8; ++p) {
          uint32_t out = 0;
          for (int j = 0; j < 8; ++j) out |= ((in[j] >> (4 * p)) & 15u) << (4 * j);
          m->codes[static_cast<size_t>((8 * nw + kOrder[p]) * words + kw)] = out;
        }
      }
    }
  }
  FillParams(
      m.get(), group,
      [&](int64_t g, int64_t n) { return (Word(qzeros, g * (rows / 8) + n / 8) >> (4 * kNibbleOf[n % 8])) & 15u; },
      [&](int64_t g, int64_t n) { return FloatAt(scales, g * rows + n); });
  return m;
}

Result<std::unique_ptr<RepackedMatrix>> RepackPacked(const HfQuantization& q, const std::string& module,
                                                     const TensorView& packed, const TensorView& scale,
                                                     const TensorView* zero_point, const TensorView* g_idx,
                                                     int64_t rows, int64_t cols) {
  const int bits = q.bits, per = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  if (cols % per != 0) {
    return Status::NotSupported("'" + module + "': " + std::to_string(cols) + " input columns do not fill " +
                                std::to_string(bits) + "-bit words (padded rows are not supported)");
  }
  const int64_t group = q.group_size > 0 ? q.group_size : cols;
  const int64_t groups = (cols + group - 1) / group;
  const int64_t words = cols / per;
  RETURN_IF_ERROR(Expect(packed, module + ".weight_packed", DType::kI32, {rows, words}));
  RETURN_IF_ERROR(ExpectFloat(scale, module + ".weight_scale", {rows, groups}));
  if (zero_point != nullptr) {
    RETURN_IF_ERROR(Expect(*zero_point, module + ".weight_zero_point", DType::kI32, {(rows + per - 1) / per, groups}));
  } else if (!q.symmetric) {
    return Status::InvalidArgument("'" + module + "': an asymmetric scheme without '" + module + ".weight_zero_point'");
  }
  ASSIGN_OR_RETURN(std::vector<int32_t> order, ActOrder(g_idx, module + ".weight_g_idx", cols, group, groups));
  ASSIGN_OR_RETURN(auto m, NewAffine("'" + module + "'", rows, cols, bits, group));
  // A row's words are MLX's already (value i of word w is column w * per + i).
  if (order.empty()) {
    for (int64_t i = 0; i < rows * words; ++i) m->codes[static_cast<size_t>(i)] = Word(packed, i);
  } else {
    PlaceInOrder(m.get(), std::move(order), [&](int64_t n, int64_t k) {
      return (Word(packed, n * words + k / per) >> (bits * (k % per))) & mask;
    });
  }
  // Codes and zeros are both stored with the same offset, which cancels;
  // a symmetric scheme's zero is that offset.
  const uint32_t offset = 1u << (bits - 1);
  FillParams(
      m.get(), group,
      [&](int64_t g, int64_t n) {
        return zero_point == nullptr ? offset
                                     : (Word(*zero_point, (n / per) * groups + g) >> (bits * (n % per))) & mask;
      },
      [&](int64_t g, int64_t n) { return FloatAt(scale, n * groups + g); });
  return m;
}

Result<std::unique_ptr<RepackedMatrix>> Fp8Matrix(const HfQuantization& q, const std::string& module,
                                                  const TensorView& weight, const TensorView& scale,
                                                  const std::string& scale_name, int64_t rows, int64_t cols) {
  RETURN_IF_ERROR(Expect(weight, module + ".weight", DType::kF8_E4M3, {rows, cols}));
  if (scale.dtype != DType::kF32 && scale.dtype != DType::kF16 && scale.dtype != DType::kBF16) {
    return Status::InvalidArgument("tensor '" + scale_name + "': dtype " + DTypeName(scale.dtype) +
                                   ", expected F32, BF16 or F16");
  }
  const std::vector<int64_t>& s = scale.shape;
  const int64_t n = scale.NumElements();
  // The scale of (row r, column group j) as an index into `scale`, and the
  // columns a group spans.
  int64_t group = cols;
  std::function<int64_t(int64_t, int64_t)> at;
  if (n == 1) {
    at = [](int64_t, int64_t) { return int64_t{0}; };
  } else if ((s.size() == 1 && s[0] == rows) || (s.size() == 2 && s[0] == rows && s[1] == 1)) {
    at = [](int64_t r, int64_t) { return r; };
  } else if (s.size() == 2 && q.block_rows > 0) {
    const int64_t br = q.block_rows, bc = q.block_cols;
    const std::vector<int64_t> want = {(rows + br - 1) / br, (cols + bc - 1) / bc};
    if (s != want) return Mismatch(scale_name, want, s);
    group = bc;
    at = [br, w = want[1]](int64_t r, int64_t j) { return r / br * w + j; };
  } else if (s.size() == 2 && s[0] == rows && s[1] > 0 && cols % s[1] == 0) {
    group = cols / s[1];
    at = [w = s[1]](int64_t r, int64_t j) { return r * w + j; };
  } else {
    return Status::InvalidArgument("tensor '" + scale_name + "': shape " + Shape(s) + " is no FP8 scale of a " +
                                   std::to_string(rows) + "x" + std::to_string(cols) +
                                   " weight (one value, one per row, per row and column group, or per block)");
  }
  if (cols % 32 != 0 || group % 32 != 0 || cols % group != 0) {
    return Status::NotSupported("'" + module + "': FP8 scales over " + GroupText(group) + " of " +
                                std::to_string(cols) + " columns (groups must be multiples of 32 dividing the row)");
  }
  auto m = std::make_unique<RepackedMatrix>();
  const int64_t groups = cols / group;
  m->scales.resize(static_cast<size_t>(rows * groups));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < groups; ++j) m->scales[static_cast<size_t>(r * groups + j)] = FloatAt(scale, at(r, j));
  }
  WeightMatrix& v = m->view;
  v.format = WeightFormat::kFp8E4M3;
  v.rows = rows;
  v.cols = cols;
  v.data = weight.data;
  v.group_size = static_cast<int>(group);
  v.scales = m->scales.data();
  v.scale_dtype = DType::kF32;
  return m;
}

}  // namespace llmhost
