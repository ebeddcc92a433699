// Helpers shared by the model sub-commands (score, generate): parsing token
// id lists and precisions, and loading a model onto a device's backend.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/model.h"
#include "util/status.h"

namespace llmhost::cli {

// "1,2, 3" -> {1, 2, 3}; InvalidArgument naming the bad item.
Result<std::vector<int32_t>> ParseIdList(const std::string& text);

// "f32" (the reference path), "fast", "fast-int8" (int8 activations for
// quantized weights) or "fast-bf16" (AMX bf16 tiles where the CPU has them).
Result<Precision> ParsePrecision(const std::string& text);

struct LoadedModel {
  std::unique_ptr<Backend> backend;             // rank 0's
  std::vector<std::unique_ptr<Backend>> ranks;  // the other ranks' (--tensor-parallel)
  std::unique_ptr<Model> model;                 // declared last: it goes first
};

// Loads PATH (directory, .gguf or random-weights spec) onto `device` ("cpu", "cuda", "cuda:N",
// "auto"), split over `tensor_parallel` devices from there. With `verbose`, prints on stderr the
// architecture, the weight bytes and the resident memory after loading.
Result<LoadedModel> LoadModelForCli(const std::string& path, Precision precision, const std::string& device,
                                    bool verbose, int tensor_parallel = 1);

}  // namespace llmhost::cli
