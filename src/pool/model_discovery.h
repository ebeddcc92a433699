// Model discovery: which models live under the --model-dir directories.
//
// Under each root, in name order, hidden entries (".name") skipped:
//   - a directory holding config.json (and no adapter_config.json: LoRA
//     adapters are skipped) is a model; id = its name;
//   - a Hugging Face cache folder `models--Org--Name` is a model per
//     revision (pool/hf_cache_revisions.h): refs/main's snapshot (the only
//     snapshot when refs/main is missing) has id "Org/Name", every other
//     ref's "Org/Name@REV" (also when it names main's commit: each pulled
//     name stays requestable); a snapshot without config.json but with
//     exactly one *.gguf file is that GGUF model;
//   - a *.gguf file is a model; id = its name without ".gguf"; a split
//     model (formats/gguf_split.h) is listed once, by its first part, with
//     id = the name without "-00001-of-0000N.gguf" and the parts' sizes;
//   - any other directory is an "org" folder, scanned one level deeper the
//     same way: ids "org/Model", "org/name" (for org/name.gguf).
// A root that is a random-weights spec ("random:ARCH:DTYPE:CONFIG.json[:SEED]",
// model/random_model.h) is that one model; id = the config file's stem, size
// = the weights it generates.
// When a root yields nothing and is itself a model directory, the root is the
// model (id = its base name). Missing roots are skipped with a warning; on a
// duplicate id the first root wins (warning).
//
// Size: the weight files (*.safetensors; else *.bin without "optimizer" or
// "training" in the name; else *.safetensors found recursively), × 1.05 for
// the estimate. A directory without weights is not a model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmhost {

enum class ModelSource { kDirectory, kGguf, kHfCache, kRandom };

struct DiscoveredModel {
  std::string id;
  std::string path;  // the model directory (HF cache: the snapshot) or the .gguf file
  std::string root;  // the --model-dir it was found under
  ModelSource source = ModelSource::kDirectory;
  uint64_t weight_bytes = 0;
  uint64_t estimated_bytes = 0;  // weight_bytes × 1.05
  std::string model_type;        // config.json model_type ("gguf" for a GGUF file)
  int64_t context_length = 0;    // max_position_embeddings / <arch>.context_length (0: unknown)
  // An encoder directory (BERT, XLM-R: model/encoder_config.h), and whether
  // its architecture is a sequence classifier (a reranker) or not (an embedder).
  bool encoder = false;
  bool classifier = false;
  bool gguf() const { return source == ModelSource::kGguf; }
  bool random() const { return source == ModelSource::kRandom; }
};

// False once a model's directory or file has gone (a random-weights model
// never goes).
bool ModelStillPresent(const DiscoveredModel& model);

inline constexpr double kEstimateFactor = 1.05;

// Sorted by id.
std::vector<DiscoveredModel> DiscoverModels(const std::vector<std::string>& roots);

// Weight bytes of a model directory (0: no weights).
uint64_t ModelWeightBytes(const std::string& dir);

// "models--Org--Name" → "Org/Name"; "" when `folder` is not one.
std::string HfCacheModelId(const std::string& folder);
// The main snapshot directory of a Hugging Face cache folder, "" when none.
std::string HfCacheSnapshot(const std::string& folder_path);

}  // namespace llmhost
