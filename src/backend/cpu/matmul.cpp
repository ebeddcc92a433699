// MatMul entry points: weight validation, dequantization, and the fast-path
// driver that splits y = x · Wᵀ over threads.
//
// Fast path (kernels in matmul_avx2.cpp; order and invariance in
// matmul_kernels.h): batches up to max_fused_n rows stream each weight row
// once with the fused kernel, threads taking contiguous row ranges; larger
// batches pack x once (threads over x tiles), then threads take panels of
// weight rows. Every output follows the same canonical order either way, so a
// row of x gives the same result alone or in any batch.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_reference.h"
#include "backend/cpu/quant_formats.h"

namespace llmhost {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 48;
constexpr int64_t kFusedGrainRows = 16;
// Large batches are processed this many rows of x at a time (bounds the
// packed or quantized copy of x; every row is computed the same way).
constexpr int64_t kMaxBatchRows = 512;

std::string Shape(const WeightMatrix& w) {
  std::string s = "[";
  s += std::to_string(w.rows);
  s += " x ";
  s += std::to_string(w.cols);
  s += "]";
  return s;
}

const cpu::FastKernels* ActiveKernels() {
  return ActiveCpuIsa() != CpuIsa::kScalar ? cpu::Avx2Kernels() : nullptr;
}

void Parallel(ThreadPool* pool, int64_t n, int64_t grain,
              const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) {
    pool->ParallelFor(n, grain, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

void FastMatMul(const cpu::FastKernels& ks, const WeightMatrix& w, const float* x, int64_t n,
                float* y, ThreadPool* pool) {
  const int64_t rows = w.rows;
  if (n <= ks.max_fused_n) {
    Parallel(pool, rows, kFusedGrainRows,
             [&](int64_t r0, int64_t r1) { ks.fused(w, x, n, r0, r1, y, rows); });
    return;
  }
  // x is packed kMaxBatchRows rows at a time into the calling thread's
  // buffer (reused across calls: no allocation or page faults per call, and
  // at most kMaxBatchRows * cols floats kept).
  static thread_local std::vector<float> packed;
  const int64_t chunk = std::min(n, kMaxBatchRows);
  const size_t need = static_cast<size_t>(ks.packed_x_floats(chunk, w.cols));
  if (packed.size() < need) packed.resize(need);
  float* xp = packed.data();
  const int64_t panels = (rows + ks.panel_rows - 1) / ks.panel_rows;
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t nt = std::min(chunk, n - t0);
    const float* xt = x + t0 * w.cols;
    float* yt = y + t0 * rows;
    const int64_t tiles = (nt + ks.x_tile_rows - 1) / ks.x_tile_rows;
    Parallel(pool, tiles, 4, [&](int64_t i0, int64_t i1) { ks.pack_x(xt, nt, w.cols, i0, i1, xp); });
    Parallel(pool, panels, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t r0 = p * ks.panel_rows;
        ks.panel(w, xp, nt, r0, std::min(rows, r0 + ks.panel_rows), yt, rows);
      }
    });
  }
}

void Int8MatMul(const cpu::Int8Kernels& ik, const WeightMatrix& w, const float* x, int64_t n, float* y,
                ThreadPool* pool) {
  // The calling thread's buffer, kMaxBatchRows rows at a time, reused across
  // calls. (Workers must get the pointer: naming the thread_local inside the
  // lambdas would give each worker its own, empty one.)
  static thread_local std::vector<uint8_t> buffer;
  const int64_t chunk = std::min(n, kMaxBatchRows);
  const size_t need = static_cast<size_t>(ik.qx_bytes(w, chunk));
  if (buffer.size() < need) buffer.resize(need);
  void* qx = buffer.data();
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t nt = std::min(chunk, n - t0);
    const float* xt = x + t0 * w.cols;
    float* yt = y + t0 * w.rows;
    Parallel(pool, nt, 8, [&](int64_t a, int64_t b) { ik.quantize_x(w, xt, nt, a, b, qx); });
    Parallel(pool, w.rows, kFusedGrainRows, [&](int64_t r0, int64_t r1) { ik.rows(w, qx, nt, r0, r1, yt, w.rows); });
  }
}

void Bf16MatMul(const cpu::Bf16Kernels& ak, const WeightMatrix& w, const float* x, int64_t n, float* y,
               ThreadPool* pool) {
  // As Int8MatMul: the calling thread's buffer, kMaxBatchRows rows at a time.
  static thread_local std::vector<uint8_t> buffer;
  const int64_t chunk = std::min(n, kMaxBatchRows);
  const size_t need = static_cast<size_t>(ak.packed_x_bytes(chunk, w.cols));
  if (buffer.size() < need) buffer.resize(need);
  void* xp = buffer.data();
  const int64_t panels = (w.rows + ak.panel_rows - 1) / ak.panel_rows;
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t nt = std::min(chunk, n - t0);
    const float* xt = x + t0 * w.cols;
    float* yt = y + t0 * w.rows;
    const int64_t blocks = (nt + ak.block_tokens - 1) / ak.block_tokens;
    Parallel(pool, blocks, 1, [&](int64_t b0, int64_t b1) { ak.pack_x(xt, nt, w.cols, b0, b1, xp); });
    Parallel(pool, panels, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t r0 = p * ak.panel_rows;
        ak.panel(w, xp, nt, r0, std::min(w.rows, r0 + ak.panel_rows), yt, w.rows);
      }
    });
  }
}

void FillNaN(float* p, int64_t count) {
  std::fill(p, p + count, std::numeric_limits<float>::quiet_NaN());
}

}  // namespace

Status CheckWeight(const WeightMatrix& w) {
  if (w.rows < 0 || w.cols <= 0) {
    return Status::InvalidArgument("weight " + Shape(w) + ": rows must be >= 0 and cols > 0");
  }
  if (w.rows > 0 && w.cols > kMaxElements / w.rows) {
    return Status::InvalidArgument("weight " + Shape(w) + ": too many elements");
  }
  if (w.rows > 0 && w.data == nullptr) {
    return Status::InvalidArgument("weight " + Shape(w) + ": no data");
  }
  switch (w.format) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return Status::OK();
    case WeightFormat::kMlxAffine: {
      const int b = w.bits;
      if (b != 2 && b != 3 && b != 4 && b != 5 && b != 6 && b != 8) {
        return Status::NotSupported("MLX weight " + Shape(w) + ": bits " + std::to_string(b) +
                                    " (supported: 2, 3, 4, 5, 6, 8)");
      }
      if (w.group_size != 32 && w.group_size != 64 && w.group_size != 128) {
        return Status::NotSupported("MLX weight " + Shape(w) + ": group size " +
                                    std::to_string(w.group_size) + " (supported: 32, 64, 128)");
      }
      if (w.cols % w.group_size != 0) {
        return Status::InvalidArgument("MLX weight " + Shape(w) + ": cols " +
                                       std::to_string(w.cols) + " not a multiple of group size " +
                                       std::to_string(w.group_size));
      }
      if (w.scale_dtype != DType::kBF16 && w.scale_dtype != DType::kF16 &&
          w.scale_dtype != DType::kF32) {
        return Status::NotSupported("MLX weight " + Shape(w) + ": scales/biases of dtype " +
                                    DTypeName(w.scale_dtype) + " (supported: BF16, F16, F32)");
      }
      if (w.rows > 0 && (w.scales == nullptr || w.biases == nullptr)) {
        return Status::InvalidArgument("MLX weight " + Shape(w) + ": missing scales or biases");
      }
      return Status::OK();
    }
    case WeightFormat::kFp8E4M3: {
      if (w.cols % 32 != 0 || w.group_size <= 0 || w.group_size % 32 != 0 || w.cols % w.group_size != 0) {
        return Status::NotSupported("FP8 weight " + Shape(w) + ": group size " + std::to_string(w.group_size) +
                                    " (cols and the group size must be multiples of 32, the group size a "
                                    "divisor of cols)");
      }
      if (w.scale_dtype != DType::kF32) {
        return Status::NotSupported("FP8 weight " + Shape(w) + ": scales of dtype " + DTypeName(w.scale_dtype) +
                                    " (F32 expected)");
      }
      if (w.rows > 0 && w.scales == nullptr) {
        return Status::InvalidArgument("FP8 weight " + Shape(w) + ": missing scales");
      }
      return Status::OK();
    }
    case WeightFormat::kGgml: {
      const int block = quant::GgmlBlockSize(w.ggml_type);
      if (block == 0) {
        const auto info = GgmlTypeInfo(static_cast<uint32_t>(w.ggml_type));
        return Status::NotSupported("GGUF weight " + Shape(w) + ": tensor type " +
                                    (info ? std::string(info->name)
                                          : std::to_string(static_cast<uint32_t>(w.ggml_type))) +
                                    " not supported by the CPU kernels");
      }
      if (w.cols % block != 0) {
        return Status::InvalidArgument("GGUF weight " + Shape(w) + ": cols " +
                                       std::to_string(w.cols) + " not a multiple of the " +
                                       std::to_string(block) + "-element block");
      }
      return Status::OK();
    }
  }
  return Status::InvalidArgument("weight " + Shape(w) + ": unknown format");
}

void DequantizeRows(const WeightMatrix& w, int64_t row_begin, int64_t row_end, float* out) {
  if (row_end <= row_begin) return;
  if (!CheckWeight(w).ok() || row_begin < 0 || row_end > w.rows) {
    FillNaN(out, (row_end - row_begin) * std::max<int64_t>(w.cols, 0));
    return;
  }
  const cpu::FastKernels* ks = ActiveKernels();
  const cpu::DequantRangeFn fn = ks ? ks->select_dequant(w) : nullptr;
  for (int64_t r = row_begin; r < row_end; ++r) {
    float* dst = out + (r - row_begin) * w.cols;
    if (fn) {
      fn(w, r, 0, w.cols, dst);
    } else {
      quant::DequantizeRangeScalar(w, r, 0, w.cols, dst);
    }
  }
}

Status MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatMulPrecision precision,
            ThreadPool* pool) {
  if (n <= 0 || w.rows == 0) return Status::OK();
  if (w.col_order != nullptr) {
    // x's columns in the stored order, then the plain product (the calling
    // thread's buffer, reused).
    static thread_local std::vector<float> gathered;
    gathered.resize(static_cast<size_t>(n * w.cols));
    for (int64_t t = 0; t < n; ++t) {
      const float* xr = x + t * w.cols;
      float* g = gathered.data() + t * w.cols;
      for (int64_t j = 0; j < w.cols; ++j) g[j] = xr[w.col_order[j]];
    }
    WeightMatrix plain = w;
    plain.col_order = nullptr;
    return MatMul(plain, gathered.data(), n, y, precision, pool);
  }
  if (Status s = CheckWeight(w); !s.ok()) {
    FillNaN(y, n * w.rows);
    return s;
  }
  const cpu::FastKernels* ks = ActiveKernels();
  if (precision == MatMulPrecision::kFastInt8 && ks != nullptr) {
    // The choice depends on w alone, so every batch size takes the same path.
    for (const cpu::Int8Kernels* ik : {cpu::Avx2Int8UnitKernels(), cpu::Avx2Int8Kernels()}) {
      if (ik != nullptr && ik->supported(w)) {
        Int8MatMul(*ik, w, x, n, y, pool);
        return Status::OK();
      }
    }
  }
  if ((precision == MatMulPrecision::kFastBf16 && n >= kAmxMinRows) || precision == MatMulPrecision::kBf16Tiles) {
    if (const cpu::Bf16Kernels* ak = cpu::ActiveBf16Kernels()) {
      Bf16MatMul(*ak, w, x, n, y, pool);
      return Status::OK();
    }
  }
  if (precision != MatMulPrecision::kReference && ks != nullptr) {
    FastMatMul(*ks, w, x, n, y, pool);
  } else {
    cpu::ReferenceMatMul(w, x, n, y, pool);
  }
  return Status::OK();
}

}  // namespace llmhost
