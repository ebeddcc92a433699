// Synthetic models: a model directory of a given architecture and shape with
// random weights, for benchmarks and memory tests (`llmhost synth-model`).
//
//   SynthOptions o;
//   o.arch = "llama";
//   o.config = {{"hidden_size", 2048}, {"num_hidden_layers", 16}, ...};
//   o.dtype = SynthDType::kMlx4;
//   o.out_dir = "/tmp/llama-1b-mlx4";
//   RETURN_IF_ERROR(SynthesizeModel(o));
//
// The directory holds what a Hugging Face / mlx-lm export holds:
//   config.json             the given keys, defaults filled in per architecture
//                           (plus `quantization` for MLX)
//   model.safetensors       matrices ~N(0, 0.02) (bf16), or MLX affine codes
//                           (U32 packed, BF16 scales/biases per group) whose
//                           dequantized values have that spread; norms 1
//                           (Gemma: 0, as it applies 1 + w); biases ~N(0, 0.02)
//   tokenizer.json          byte-level BPE of exactly vocab_size ids: 256 byte
//                           tokens, merges, and <|endoftext|>, <|im_start|>,
//                           <|im_end|> as the last three ids
//   tokenizer_config.json   a ChatML chat_template, eos <|im_end|>
//   generation_config.json  bos/eos/pad ids
//
// Weights are generated and written one chunk at a time (memory stays small
// whatever the model size) on the given thread pool; the files depend only on
// the options (not on the thread count).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"
#include "util/thread_pool.h"

namespace llmhost {

// bf16; MLX affine 4/8-bit; the Hugging Face layouts GPU servers load: FP8
// e4m3 with 128x128 block scales (quant_method "fp8"), GPTQ 4-bit (v1
// checkpoint), AWQ 4-bit GEMM and compressed-tensors pack-quantized 4-bit
// (W4A16, asymmetric), groups of group_size, zeros uniform.
enum class SynthDType { kBF16, kMlx4, kMlx8, kFp8, kGptq4, kAwq4, kW4A16 };
inline bool IsMlx(SynthDType d) { return d == SynthDType::kMlx4 || d == SynthDType::kMlx8; }

struct SynthOptions {
  std::string arch;             // model_type: llama, mistral, qwen2, qwen3, qwen3_moe, phi3, gemma3_text
  nlohmann::ordered_json config;  // Hugging Face config.json keys (an object; may be partial)
  SynthDType dtype = SynthDType::kBF16;
  int group_size = 64;          // MLX, GPTQ, AWQ: 32, 64 or 128
  uint64_t seed = 0;
  std::string out_dir;          // created if missing; files in it are replaced
  ThreadPool* pool = nullptr;   // generation threads (null: the calling thread only)
};

// "bf16", "mlx4", "mlx8", "fp8", "gptq4", "awq4", "w4a16"; InvalidArgument otherwise.
Result<SynthDType> ParseSynthDType(std::string_view name);
// The architectures synth-model can write.
const std::vector<std::string>& SynthArchitectures();

// The config.json that SynthesizeModel writes: options.config with defaults
// filled in, checked by the model loader's own parser. InvalidArgument /
// NotSupported naming the key for a bad or missing field, an unknown
// architecture or a shape the chosen dtype cannot hold.
Result<nlohmann::ordered_json> SynthConfig(const SynthOptions& options);

struct SynthSummary {
  uint64_t weight_bytes = 0;   // tensor bytes in model.safetensors
  int64_t tensors = 0;         // tensors in the file
};

// Writes the model directory described above.
Result<SynthSummary> SynthesizeModel(const SynthOptions& options);

// Writes a scripted test model (model/scripted_model.h): a tiny llama as
// above with config.json's model_type "llmhost_scripted", `script_json` as
// script.json (checked first) and a chat template with Hermes tool calls and
// Qwen3 think blocks (chat_template.jinja).
Result<SynthSummary> SynthesizeScriptedModel(const std::string& out_dir, const std::string& script_json,
                                             uint64_t seed = 0, ThreadPool* pool = nullptr);

}  // namespace llmhost
