// WeightSource: a model's stored tensors behind Hugging Face names, whatever
// the file format: safetensors (bf16/f16/f32, single or sharded), MLX
// affine-quantized safetensors (weight/scales/biases triplets), GPTQ / AWQ /
// FP8 checkpoints, or GGUF (blk.N.* names translated to HF names).
//
// Matrices come back as WeightMatrix views into the mapped files (zero-copy;
// GPTQ and AWQ codes are repacked at load, so theirs are the source's own);
// small 1-D tensors (norms, biases) are converted to f32 vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/weight_matrix.h"
#include "formats/hf_config.h"
#include "util/status.h"

namespace llmhost {

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  // The file or directory, for messages.
  virtual const std::string& path() const = 0;
  // True when the module's matrix exists ("model.layers.0.self_attn.q_proj";
  // its "<module>.weight" tensor).
  virtual bool HasMatrix(const std::string& module) const = 0;
  // True when the named tensor exists ("model.layers.0.self_attn.q_proj.bias").
  virtual bool HasTensor(const std::string& name) const = 0;
  // The matrix of `module`, checked to be [rows, cols] (out, in). NotFound
  // naming the tensor when absent; InvalidArgument naming it, with the
  // expected and found shapes, on a mismatch; NotSupported for a dtype that
  // cannot be a weight.
  virtual Result<WeightMatrix> Matrix(const std::string& module, int64_t rows,
                                      int64_t cols) const = 0;
  // Stacked matrices: "<module>.weight" of shape [n, rows, cols] (MLX
  // switch_mlp experts) as n views.
  virtual Result<std::vector<WeightMatrix>> StackedMatrices(const std::string& module, int64_t n,
                                                            int64_t rows, int64_t cols) const = 0;
  // A tensor of exactly n elements (any shape), converted to f32.
  virtual Result<std::vector<float>> Vector(const std::string& name, int64_t n) const = 0;
  // Bytes of all tensor data (what a full read of the weights touches).
  virtual uint64_t TotalBytes() const = 0;
  // The caller copied the module's matrix (its backend prepared a copy): a
  // source that generated the bytes may free them, keeping host memory near
  // one model's weights. Views of it are invalid afterwards.
  virtual void ReleaseMatrix(const std::string& module) { (void)module; }
};

// Opens the safetensors of a model directory (one file or shards), plain,
// MLX-quantized as `mlx` (config.json's quantization) says, or GPTQ / AWQ /
// FP8 as `hf` says (their matrices made into the backends' formats at load:
// model/quant_repack.h).
Result<std::unique_ptr<WeightSource>> OpenSafetensorsSource(const std::string& dir,
                                                            const std::optional<MlxQuantization>& mlx,
                                                            const std::optional<HfQuantization>& hf = std::nullopt);

// Opens a GGUF file (a split model by its first part, all parts read as
// one): its hyperparameters become *config (as a config.json
// would say them), *interleaved_rope tells how RoPE pairs dimensions for its
// architecture (llama: interleaved, Q/K stored permuted for it), and
// *rope_freq_factors holds the rope_freqs tensor when the file has one.
Result<std::unique_ptr<WeightSource>> OpenGgufSource(const std::string& path, ModelConfig* config,
                                                     bool* interleaved_rope,
                                                     std::vector<float>* rope_freq_factors);

}  // namespace llmhost
