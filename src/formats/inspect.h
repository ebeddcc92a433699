// A JSON summary of a model directory (safetensors + config.json) or a GGUF
// file, for `llmhost inspect`. Opening maps the weights and reads headers
// only: cheap even for very large models.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace llmhost {

struct InspectOptions {
  size_t max_tensors = 20;   // tensors listed (the first by name / file order)
  bool all_tensors = false;  // list every tensor
};

// `path`: a model directory, a .safetensors file, or a .gguf file (a
// directory holding no safetensors but exactly one .gguf is read as that
// file). Errors name the path and the problem.
Result<nlohmann::ordered_json> InspectModel(const std::string& path, const InspectOptions& opts);

}  // namespace llmhost
