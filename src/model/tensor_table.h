// TensorTable: the named tensors a WeightSource over safetensors-style names
// binds from (weight_source_safetensors.cpp): a model directory's mapped
// files, or tensors generated when first asked for (a random-weights model,
// random_model.h). Both go through the same checks and views, so a backend
// sees the same formats from either.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "model/weight_source.h"
#include "util/status.h"

namespace llmhost {

class TensorTable {
 public:
  virtual ~TensorTable() = default;
  virtual bool Has(const std::string& name) const = 0;
  // The tensor's bytes: valid while the table lives, or until Release(name).
  // NotFound when absent.
  virtual Result<TensorView> Get(const std::string& name) const = 0;
  // Bytes of all tensor data.
  virtual uint64_t TotalBytes() const = 0;
  // The caller holds its own copy of `name` now: a table that made the bytes
  // may free them (a mapped file keeps them).
  virtual void Release(const std::string& name) const { (void)name; }
};

// A WeightSource over `table`: plain, MLX-quantized as `mlx` says, or GPTQ /
// AWQ / FP8 as `hf` says (quant_repack.h); `path`
// names it in messages.
std::unique_ptr<WeightSource> OpenTensorTableSource(std::unique_ptr<TensorTable> table,
                                                    std::optional<MlxQuantization> mlx, std::string path,
                                                    std::optional<HfQuantization> hf = std::nullopt);

}  // namespace llmhost
