// Pieces of synth_model.cpp: the tensor plan and weight generator
// (synth_weights.cpp) and the tokenizer files (synth_tokenizer.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors_writer.h"
#include "model/arch.h"
#include "model/synth_model.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace llmhost::synth {

// Spread of the random matrices (as initializer_range 0.02 of HF configs).
inline constexpr float kWeightStd = 0.02f;

// How a tensor's values are made.
enum class Fill {
  kNormal,      // BF16 ~ N(0, kWeightStd) (Irwin-Hall approximation, |x| < 3.5 std)
  kConstant,    // BF16 `value`
  kRandomBits,  // U32 uniform: MLX codes, each uniform in [0, 2^bits)
  kMlxScales,   // BF16 per group: spread / (2^bits - 1) x (0.75 .. 1.25)
  kMlxBiases,   // BF16 per group: -scale x (2^bits - 1) / 2 (codes centred on 0)
  kFp8Codes,    // F8_E4M3 ~ N(0, 1) x kFp8Spread, rounded (scaled back by kFp8Scale)
  kFp8Scales,   // F32 per block: kWeightStd / kFp8Spread x (0.75 .. 1.25)
  kF16Scales,   // F16 per group: as kMlxScales (GPTQ / AWQ scales)
  kGroupIndex,  // I32 element k: k / value (GPTQ g_idx in input order)
};

// FP8 weights: codes of N(0, 1) x kFp8Spread, one scale per 128x128 block.
inline constexpr int kFp8Block = 128;
inline constexpr float kFp8Spread = 16.0f;

struct Tensor {
  SafetensorsTensorSpec spec;
  Fill fill = Fill::kNormal;
  float value = 0;     // kConstant, kGroupIndex (the group size)
  int bits = 0;        // kMlxScales, kMlxBiases, kF16Scales
  std::string stream;  // random stream name (a tensor's biases reuse its scales' stream)
};

// Every tensor Model::Load binds for `spec`, in the layout the dtype implies
// (MLX: quantized matrices as weight/scales/biases, MoE experts stacked
// under switch_mlp as mlx-lm stores them).
std::vector<Tensor> PlanTensors(const ModelSpec& spec, SynthDType dtype, int group_size);

int64_t NumElements(const SafetensorsTensorSpec& s);
uint64_t TensorBytes(const Tensor& t);

// Generates elements [first, first + count) of `t` into `out` (count x its
// dtype's size bytes; `first` a multiple of 65536, the stream's block), the
// blocks in parallel on `pool` (null: the calling thread). The bytes depend
// only on (seed, t.stream, position).
void FillElements(const Tensor& t, uint64_t seed, int64_t first, int64_t count, char* out, ThreadPool* pool);

// Generates every tensor and streams model.safetensors into `path`.
Status WriteWeights(const std::string& path, const std::vector<Tensor>& tensors, uint64_t seed,
                    ThreadPool* pool);

// What SynthesizeModel writes, before any file is: the completed config.json,
// the spec the loader builds from it and every tensor with its contents' plan.
struct ModelPlan {
  nlohmann::ordered_json config;
  ModelSpec spec;
  std::vector<Tensor> tensors;
  uint64_t weight_bytes = 0;
};
// InvalidArgument / NotSupported as SynthConfig says, or for weights over 4 TiB.
Result<ModelPlan> PlanModel(const SynthOptions& options);

// Ids of the three special tokens: the last three of the vocabulary.
struct SpecialIds {
  int64_t endoftext, im_start, im_end;
};
SpecialIds SpecialsFor(int64_t vocab);
// Smallest vocabulary the tokenizer can fill: 256 byte tokens + 3 specials.
inline constexpr int64_t kMinVocab = 259;

// tokenizer.json (serialized) with exactly `vocab` ids.
std::string TokenizerJson(int64_t vocab);
// tokenizer_config.json (ChatML chat_template).
nlohmann::ordered_json TokenizerConfig(int64_t vocab, int64_t model_max_length);
// generation_config.json: bos/eos/pad ids.
nlohmann::ordered_json GenerationConfigJson(int64_t vocab);
// The ChatML template text.
const std::string& ChatMlTemplate();

}  // namespace llmhost::synth
