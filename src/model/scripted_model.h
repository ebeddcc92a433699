// A test model whose output is chosen text, so that integration tests get
// exact tool-call and reasoning markup from the real server (pool, engine,
// detokenizer, output parser, API formatters).
//
// A model directory as `llmhost synth-model --arch scripted --script FILE`
// writes it: a tiny llama (weights loaded, never computed with) whose
// config.json says "model_type": "llmhost_scripted", its tokenizer, and
// script.json:
//
//   {"replies": [{"when": "What is the weather", "text": "<tool_call>..."},
//                {"when": "\"temperature\"", "text": "It is sunny."},
//                {"text": "the default reply"}]}
//
// The reply is chosen from the prompt (the request's rendered chat): the one
// whose `when` occurs latest in it wins (so the tool result of a round trip
// picks the answer over the question that asked for the call); a reply
// without `when` is the default (used when no `when` occurs); none at all:
// the output is empty. Stateless: concurrent requests, prefix caching and
// preemption change nothing.
//
// Forward puts all probability on the next token of the chosen text (logit
// 0 there, -100 elsewhere: sampling settings do not matter), then on EOS.
// Position by position the tokens are stored in the KV cache (layer 0's K
// row, as base-64 digits, exact in f32, bf16 and f16), so every step sees
// its sequence's whole history even when the prompt came from the prefix
// cache; ForwardItem::generated_from says where the prompt ends. When the
// output has left the text (the engine closed a think block at its budget),
// the text continues after the longest tail of the output (>= 4 bytes) found
// in it, else ends.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/kv_cache.h"
#include "util/status.h"

namespace llmhost {

class Tokenizer;
struct ForwardItem;
struct ForwardOutput;

inline constexpr const char* kScriptedModelType = "llmhost_scripted";
inline constexpr const char* kScriptFileName = "script.json";

struct ScriptReply {
  std::string when;  // "" : the default
  std::string text;
};

// script.json's replies; InvalidArgument naming the field.
Result<std::vector<ScriptReply>> ParseScript(const std::string& json_text);

// The reply for a prompt's text (nullptr when none applies).
const ScriptReply* ChooseReply(const std::vector<ScriptReply>& replies, const std::string& prompt);

// Where the output continues in `text` after `generated` (text.size(): at
// its end; npos: nowhere, the output ends).
size_t ScriptPosition(const std::string& text, const std::string& generated);

class ScriptedOutput {
 public:
  // `dir`: the model directory (script.json, the tokenizer); `eos`: the id
  // that ends each reply.
  static Result<std::unique_ptr<ScriptedOutput>> Load(const std::string& dir, int64_t vocab, int32_t eos);
  ~ScriptedOutput();

  // Model::Forward's contract (blocks reserved all-or-nothing, lengths advanced).
  Status Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out);

 private:
  ScriptedOutput() = default;
  // The item's sequence's token ids so far (positions [0, length)), read from the cache.
  Result<std::vector<int32_t>> History(const KvCache& cache, const KvSequence& seq) const;
  Status Store(KvCache& cache, const KvSequence& seq, int64_t from, std::span<const int32_t> ids) const;
  int32_t Next(const std::vector<int32_t>& ids, int64_t prompt_length) const;

  std::vector<ScriptReply> replies_;
  std::unique_ptr<Tokenizer> tokenizer_;
  int64_t vocab_ = 0;
  int32_t eos_ = 0;
};

}  // namespace llmhost
