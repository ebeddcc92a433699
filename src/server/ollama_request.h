// Ollama request bodies (/api/chat, /api/generate) → InferenceRequest.
//
// Each is checked under Ollama's own field names, then written as the
// OpenAI request it means and read by that parser (openai_request.h), so
// both APIs share one set of rules:
//   model, stream (default true), keep_alive ("5m", "1h30m", seconds; 0:
//   unload when done; negative: stay loaded), think (true / false / "low" /
//   "medium" / "high"), format ("json" or a JSON Schema), options:
//     temperature, top_p, top_k, min_p, seed, num_predict (-1 / -2: no
//     limit), stop, repeat_penalty, presence_penalty, frequency_penalty;
//     resource knobs llmhost decides itself (num_ctx, num_batch, num_gpu,
//     main_gpu, num_thread, use_mmap, ...) are accepted and logged as left
//     to the server; sampling it does not do (mirostat, tfs_z,
//     typical_p other than off) and unknown options are 400s.
//   /api/chat: messages (system / user / assistant / tool; content,
//     thinking, tool_calls with arguments as objects, tool_name), tools.
//     No messages: the model is only loaded (or unloaded, keep_alive 0).
//   /api/generate: prompt, system, raw (the prompt as is, no template). An
//     empty prompt only loads (or unloads) the model.
// images, suffix, template and context are 400s that say so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_fields.h"

namespace llmhost::server {

// Sets out->keep_alive_s and out->load_only too; `ignored_options` gets the
// resource options accepted and left to the server.
MaybeError ParseOllamaChatRequest(const OJson& body, InferenceRequest* out, std::vector<std::string>* ignored_options);
MaybeError ParseOllamaGenerateRequest(const OJson& body, InferenceRequest* out,
                                      std::vector<std::string>* ignored_options);

// An option Ollama knows: a resource knob (num_ctx, num_gpu, num_thread,
// ...: llmhost decides these itself) or a sampling one (temperature, top_k,
// num_predict, mirostat, ...). Routes where none applies (embeddings)
// accept them as Ollama does and log them as unused.
bool IsKnownOllamaOption(const std::string& key);

// keep_alive as seconds: a number, or a Go duration ("5m", "1h30m", "90s",
// "-1m"), or a string of seconds.
MaybeError ReadKeepAlive(const OJson& body, std::optional<double>* out);

}  // namespace llmhost::server
