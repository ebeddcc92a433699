// WeightSource over safetensors-style tensors (a TensorTable): a Hugging
// Face model directory's files (one or shards), plain or MLX
// affine-quantized, or a random-weights model's generated tensors.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "backend/cpu/matmul.h"
#include "formats/safetensors_model.h"
#include "model/quant_repack.h"
#include "model/tensor_table.h"

#include <map>
#include <mutex>

namespace llmhost {

namespace {

std::string ShapeStr(const std::vector<int64_t>& s) { return ShapeToString(s); }

// f32 values of a float tensor (F32/F16/BF16), copied (the map may be unaligned).
Result<std::vector<float>> ToF32(const TensorView& v, const std::string& name) {
  const int64_t n = v.NumElements();
  std::vector<float> out(static_cast<size_t>(n));
  switch (v.dtype) {
    case DType::kF32:
      std::memcpy(out.data(), v.data, static_cast<size_t>(n) * 4);
      break;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, v.data + 2 * i, 2);
        out[i] = v.dtype == DType::kF16 ? F16ToF32(h) : Bf16ToF32(h);
      }
      break;
    default:
      return Status::NotSupported("tensor '" + name + "': dtype " + DTypeName(v.dtype) +
                                  " is not supported here (F32, F16, BF16)");
  }
  return out;
}

// The tensors of a model directory's mapped safetensors files.
class MappedTable final : public TensorTable {
 public:
  explicit MappedTable(std::unique_ptr<SafetensorsModel> st) : st_(std::move(st)) {}
  bool Has(const std::string& name) const override { return st_->Find(name) != nullptr; }
  Result<TensorView> Get(const std::string& name) const override { return st_->Tensor(name); }
  uint64_t TotalBytes() const override { return st_->total_tensor_bytes(); }
  // The whole pages inside the tensor leave this process's memory (the map is
  // read-only and private: a later read faults them in from the file again).
  void Release(const std::string& name) const override {
    auto t = st_->Tensor(name);
    if (!t.ok()) return;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<uintptr_t>(t->data) + page - 1) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(t->data) + t->n_bytes) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }

 private:
  std::unique_ptr<SafetensorsModel> st_;
};

class TableSource final : public WeightSource {
 public:
  TableSource(std::unique_ptr<TensorTable> st, std::optional<MlxQuantization> mlx,
              std::optional<HfQuantization> hf, std::string path)
      : st_(std::move(st)), mlx_(std::move(mlx)), hf_(std::move(hf)), path_(std::move(path)) {}

  const std::string& path() const override { return path_; }
  bool HasMatrix(const std::string& module) const override {
    return st_->Has(module + ".weight") || (hf_ && (st_->Has(module + ".qweight") || st_->Has(module + ".weight_packed")));
  }
  bool HasTensor(const std::string& name) const override { return st_->Has(name); }

  Result<WeightMatrix> Matrix(const std::string& module, int64_t rows,
                              int64_t cols) const override {
    ASSIGN_OR_RETURN(std::vector<WeightMatrix> v, Load(module, 0, rows, cols));
    return v[0];
  }

  Result<std::vector<WeightMatrix>> StackedMatrices(const std::string& module, int64_t n,
                                                    int64_t rows, int64_t cols) const override {
    return Load(module, n, rows, cols);
  }

  Result<std::vector<float>> Vector(const std::string& name, int64_t n) const override {
    ASSIGN_OR_RETURN(TensorView v, Get(name));
    if (v.NumElements() != n) {
      return Status::InvalidArgument(path_ + ": tensor '" + name + "': expected " +
                                     std::to_string(n) + " elements, found shape " +
                                     ShapeStr(v.shape));
    }
    auto r = ToF32(v, name);
    st_->Release(name);
    if (!r.ok()) return r.status().WithContext(path_);
    return r;
  }

  uint64_t TotalBytes() const override { return st_->TotalBytes(); }

  void ReleaseMatrix(const std::string& module) override {
    for (const char* part : {".weight", ".scales", ".biases", ".qweight", ".qzeros", ".g_idx", ".weight_scale",
                             ".weight_scale_inv", ".weight_packed", ".weight_zero_point", ".weight_g_idx",
                             ".weight_shape"}) {
      st_->Release(module + part);
    }
    std::lock_guard<std::mutex> lock(mu_);
    made_.erase(module);
  }

 private:
  Result<TensorView> Get(const std::string& name) const {
    if (!st_->Has(name)) return Status::NotFound(path_ + ": missing tensor '" + name + "'");
    return st_->Get(name);
  }

  Status Mismatch(const std::string& name, const std::vector<int64_t>& expected,
                  const std::vector<int64_t>& found) const {
    return Status::InvalidArgument(path_ + ": tensor '" + name + "': expected shape " +
                                   ShapeStr(expected) + ", found " + ShapeStr(found));
  }

  // A GPTQ / AWQ / FP8 matrix made at load (quant_repack.h), kept until
  // ReleaseMatrix or the source's end.
  Result<WeightMatrix> LoadHf(const std::string& module, int64_t rows, int64_t cols) const {
    {
      // Made already (each rank of a split model asks for it): views of it stay valid.
      std::lock_guard<std::mutex> lock(mu_);
      auto it = made_.find(module);
      if (it != made_.end()) return it->second->view;
    }
    const HfQuantization& q = *hf_;
    Result<std::unique_ptr<RepackedMatrix>> made = Status::Internal("unreachable");
    auto optional = [&](const std::string& name) -> Result<std::optional<TensorView>> {
      if (!st_->Has(name)) return std::optional<TensorView>();
      ASSIGN_OR_RETURN(TensorView t, Get(name));
      return std::optional<TensorView>(t);
    };
    if (q.method == HfQuantization::Method::kPacked) {
      ASSIGN_OR_RETURN(TensorView w, Get(module + ".weight_packed"));
      ASSIGN_OR_RETURN(TensorView sc, Get(module + ".weight_scale"));
      ASSIGN_OR_RETURN(std::optional<TensorView> zp, optional(module + ".weight_zero_point"));
      ASSIGN_OR_RETURN(std::optional<TensorView> gi, optional(module + ".weight_g_idx"));
      made = RepackPacked(q, module, w, sc, zp ? &*zp : nullptr, gi ? &*gi : nullptr, rows, cols);
    } else if (q.method == HfQuantization::Method::kFp8) {
      ASSIGN_OR_RETURN(TensorView w, Get(module + ".weight"));
      const std::string sname = module + (st_->Has(module + ".weight_scale_inv") ? ".weight_scale_inv" : ".weight_scale");
      ASSIGN_OR_RETURN(TensorView sc, Get(sname));
      made = Fp8Matrix(q, module, w, sc, sname, rows, cols);
    } else {
      ASSIGN_OR_RETURN(TensorView qw, Get(module + ".qweight"));
      ASSIGN_OR_RETURN(TensorView qz, Get(module + ".qzeros"));
      ASSIGN_OR_RETURN(TensorView sc, Get(module + ".scales"));
      if (q.method == HfQuantization::Method::kAwq) {
        made = RepackAwq(q, module, qw, qz, sc, rows, cols);
      } else {
        std::optional<TensorView> gi;
        if (st_->Has(module + ".g_idx")) {
          ASSIGN_OR_RETURN(gi, Get(module + ".g_idx"));
        }
        made = RepackGptq(q, module, qw, qz, sc, gi ? &*gi : nullptr, rows, cols);
      }
    }
    if (!made.ok()) return made.status().WithContext(path_);
    // The checkpoint's own tensors are not read again (FP8 codes are: they
    // are the view), so their pages go.
    for (const char* part : {".qweight", ".qzeros", ".scales", ".g_idx", ".weight_scale", ".weight_scale_inv",
                             ".weight_packed", ".weight_zero_point", ".weight_g_idx"}) {
      if (st_->Has(module + part)) st_->Release(module + part);
    }
    const WeightMatrix view = (*made)->view;
    std::lock_guard<std::mutex> lock(mu_);
    made_[module] = std::move(*made);
    return view;
  }

  // Whether `module` is stored quantized the hf_ way (else it is a plain
  // 16/32-bit matrix: lm_head and embeddings usually are).
  bool HfQuantized(const std::string& module) const {
    if (!hf_) return false;
    if (hf_->method == HfQuantization::Method::kPacked) return st_->Has(module + ".weight_packed");
    if (hf_->method != HfQuantization::Method::kFp8) return st_->Has(module + ".qweight");
    auto w = st_->Has(module + ".weight") ? st_->Get(module + ".weight") : Result<TensorView>(Status::NotFound(""));
    return w.ok() && w->dtype == DType::kF8_E4M3;
  }

  // n == 0: one [rows, cols] matrix; n > 0: [n, rows, cols] stacked.
  Result<std::vector<WeightMatrix>> Load(const std::string& module, int64_t n, int64_t rows,
                                         int64_t cols) const {
    if (HfQuantized(module)) {
      if (n > 0) {
        return Status::NotSupported(path_ + ": '" + module + "': stacked " + hf_->Describe() +
                                    " experts are not supported (one module per expert is)");
      }
      ASSIGN_OR_RETURN(WeightMatrix m, LoadHf(module, rows, cols));
      return std::vector<WeightMatrix>{m};
    }
    const std::string wname = module + ".weight";
    ASSIGN_OR_RETURN(TensorView w, Get(wname));
    const int64_t count = n == 0 ? 1 : n;
    auto lead = [&](std::vector<int64_t> tail) {
      if (n > 0) tail.insert(tail.begin(), n);
      return tail;
    };
    std::vector<WeightMatrix> out(static_cast<size_t>(count));
    if (st_->Has(module + ".scales")) {
      std::optional<MlxQuantParams> q;
      if (mlx_) q = mlx_->ForModule(module);
      if (!q) {
        return Status::InvalidArgument(path_ + ": tensor '" + module +
                                       ".scales' exists but config.json quantizes no such module");
      }
      if (q->mode != "affine") {
        return Status::NotSupported(path_ + ": '" + module + "': MLX quantization mode '" + q->mode +
                                    "' is not supported (affine)");
      }
      if (w.dtype != DType::kU32) {
        return Status::NotSupported(path_ + ": tensor '" + wname + "': quantized weight dtype " +
                                    DTypeName(w.dtype) + ", expected U32");
      }
      if (q->bits <= 0 || q->group_size <= 0 || (cols * q->bits) % 32 != 0 ||
          cols % q->group_size != 0) {
        return Status::InvalidArgument(path_ + ": '" + module + "': " + std::to_string(cols) +
                                       " columns do not fit bits " + std::to_string(q->bits) +
                                       " / group_size " + std::to_string(q->group_size));
      }
      const int64_t packed = cols * q->bits / 32, groups = cols / q->group_size;
      if (w.shape != lead({rows, packed})) return Mismatch(wname, lead({rows, packed}), w.shape);
      ASSIGN_OR_RETURN(TensorView sc, Get(module + ".scales"));
      ASSIGN_OR_RETURN(TensorView bi, Get(module + ".biases"));
      for (const TensorView* t : {&sc, &bi}) {
        const std::string tn = module + (t == &sc ? ".scales" : ".biases");
        if (t->shape != lead({rows, groups})) return Mismatch(tn, lead({rows, groups}), t->shape);
        if (t->dtype != DType::kBF16 && t->dtype != DType::kF16 && t->dtype != DType::kF32) {
          return Status::NotSupported(path_ + ": tensor '" + tn + "': dtype " +
                                      DTypeName(t->dtype) + " (BF16, F16 or F32 expected)");
        }
      }
      if (sc.dtype != bi.dtype) {
        return Status::InvalidArgument(path_ + ": '" + module + "': scales and biases differ in dtype");
      }
      const size_t sbytes = DTypeSize(sc.dtype);
      for (int64_t i = 0; i < count; ++i) {
        WeightMatrix& m = out[static_cast<size_t>(i)];
        m.format = WeightFormat::kMlxAffine;
        m.rows = rows;
        m.cols = cols;
        m.data = w.data + i * rows * packed * 4;
        m.bits = q->bits;
        m.group_size = q->group_size;
        m.scales = sc.data + i * rows * groups * sbytes;
        m.biases = bi.data + i * rows * groups * sbytes;
        m.scale_dtype = sc.dtype;
      }
      return out;
    }
    WeightFormat f;
    switch (w.dtype) {
      case DType::kF32: f = WeightFormat::kF32; break;
      case DType::kF16: f = WeightFormat::kF16; break;
      case DType::kBF16: f = WeightFormat::kBF16; break;
      case DType::kF8_E4M3:
        return Status::InvalidArgument(path_ + ": tensor '" + wname + "' is FP8 (F8_E4M3) but config.json's "
                                       "quantization_config names no FP8 scheme (quant_method \"fp8\" or "
                                       "\"compressed-tensors\"), so its scales cannot be read");
      default:
        return Status::NotSupported(path_ + ": tensor '" + wname + "': dtype " +
                                    DTypeName(w.dtype) + " is not supported for weights " +
                                    "(F32, F16, BF16, or MLX-quantized U32 with scales/biases)");
    }
    if (w.shape != lead({rows, cols})) return Mismatch(wname, lead({rows, cols}), w.shape);
    for (int64_t i = 0; i < count; ++i) {
      WeightMatrix& m = out[static_cast<size_t>(i)];
      m.format = f;
      m.rows = rows;
      m.cols = cols;
      m.data = w.data + i * rows * cols * static_cast<int64_t>(DTypeSize(w.dtype));
    }
    return out;
  }

  std::unique_ptr<TensorTable> st_;
  std::optional<MlxQuantization> mlx_;
  std::optional<HfQuantization> hf_;
  std::string path_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::unique_ptr<RepackedMatrix>> made_;
};

}  // namespace

std::unique_ptr<WeightSource> OpenTensorTableSource(std::unique_ptr<TensorTable> table,
                                                    std::optional<MlxQuantization> mlx, std::string path,
                                                    std::optional<HfQuantization> hf) {
  return std::make_unique<TableSource>(std::move(table), std::move(mlx), std::move(hf), std::move(path));
}

Result<std::unique_ptr<WeightSource>> OpenSafetensorsSource(const std::string& dir,
                                                            const std::optional<MlxQuantization>& mlx,
                                                            const std::optional<HfQuantization>& hf) {
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsModel> st, SafetensorsModel::Open(dir));
  return OpenTensorTableSource(std::make_unique<MappedTable>(std::move(st)), mlx, dir, hf);
}

}  // namespace llmhost
