// Random-weights models: a model named by a spec string instead of a path,
// whose weights are generated in memory at load time (as vLLM's dummy
// loader), for benchmarks on machines whose disks cannot hold the model.
//
//   random:ARCH:DTYPE:CONFIG.json[:SEED]
//     ARCH    an architecture synth-model writes (llama, qwen3, ...)
//     DTYPE   bf16, mlx4, mlx8, fp8, gptq4, awq4 or w4a16; a group size other than
//             64 as mlx4-g32 / mlx8-g128 / gptq4-g128
//     CONFIG  a Hugging Face config.json (may be partial: synth-model's
//             defaults complete it)
//     SEED    default 0
//
// The model is exactly what `llmhost synth-model --arch ARCH --config @CONFIG
// --dtype DTYPE --group-size G --seed SEED` writes and Model::Load reads back
// (the same bytes, so the same logits), without the files: each tensor is
// generated when the loader asks for it, in parallel, through the same
// weight checks and views as a safetensors load. Its tokenizer, chat
// template and generation config are synth-model's, built in memory.
//
// Model::Load, LoadModelTokenizer & co. take the spec wherever they take a
// model path; its name is the config file's stem.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "formats/generation_config.h"
#include "formats/hf_config.h"
#include "model/synth_model.h"
#include "model/weight_source.h"
#include "tokenizer/tokenizer.h"
#include "util/sha256.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace llmhost {

inline constexpr std::string_view kRandomModelPrefix = "random:";

// True when `path` is a random-weights spec (starts with "random:").
bool IsRandomModelSpec(std::string_view path);

struct RandomModelSpec {
  SynthOptions options;  // arch, config (read from the file), dtype, group size, seed; no out_dir
  std::string name;      // the config file's stem ("llama8b" for /x/llama8b.json)
};

// Parses the spec and reads its config file. InvalidArgument naming the
// field and what is expected; the config's own errors come at load.
Result<RandomModelSpec> ParseRandomModelSpec(const std::string& spec);

// The spec string of a model: "random:ARCH:DTYPE[-gG]:CONFIG:SEED".
std::string RandomModelSpecString(const std::string& arch, const std::string& dtype, int group_size,
                                  const std::string& config_path, uint64_t seed);

struct RandomModelParts {
  ModelConfig config;                        // as config.json would parse
  std::unique_ptr<WeightSource> weights;     // generates on demand (not thread-safe)
  uint64_t weight_bytes = 0;                 // what model.safetensors would hold
  Sha256Digest identity{};                   // of everything the weights depend on (KV block keys)
};

// The config and a weight source of the spec (nothing is generated yet);
// generation runs on `pool` (null: the calling thread).
Result<RandomModelParts> OpenRandomModel(const std::string& spec, ThreadPool* pool);

// A model's companions wherever they live: the files of a model directory or
// GGUF file, or, for a random-weights spec, synth-model's built in memory.
Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& path);
Result<ModelChatTemplates> LoadModelChatTemplatesAt(const std::string& path, const Tokenizer& tok);
// NotFound where the model has none (a GGUF file, many MLX directories).
Result<GenerationConfig> LoadModelGenerationConfig(const std::string& path);

}  // namespace llmhost
