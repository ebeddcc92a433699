// Which files of a Hub repository `llmhost pull` downloads.
//
// Default patterns: weights (*.safetensors, *.gguf), configs (*.json),
// tokenizer files (tokenizer.*, *.model, *.tiktoken), chat templates
// (*.jinja). --include patterns replace the defaults; --exclude patterns
// then drop files. Patterns are shell globs matched against the whole path
// ('*' crosses '/', as huggingface_hub's allow_patterns do); a pattern
// ending in '/' means everything under that folder.
// GGUF: with a quantization (":Q4_K_M") exactly one GGUF model must hold it
// in its file names (case-insensitive) and the other .gguf files are
// dropped; without one, several GGUF models are an error that lists them.
// A split model (NAME-00001-of-0000N.gguf …, formats/gguf_split.h) is one
// model: all its parts are chosen, and a part missing from the list is an
// error.
// "consolidated*.safetensors" (Mistral's original checkpoint, a copy of the
// weights) is skipped by default when other safetensors weights exist.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pool/hub_model_info.h"
#include "util/status.h"

namespace llmhost {

// Shell glob: '*', '?', '[...]' (with '!' negation and ranges), '\' escapes.
bool GlobMatch(std::string_view pattern, std::string_view path);

struct HubFileFilter {
  std::vector<std::string> include;  // empty: the defaults
  std::vector<std::string> exclude;
  std::string quant;                 // "" for none
};

// The files to download, in the repository's order. InvalidArgument with
// the candidates listed when nothing matches or the GGUF choice is ambiguous.
Result<std::vector<HubFile>> SelectHubFiles(const std::vector<HubFile>& files, const HubFileFilter& filter);

}  // namespace llmhost
