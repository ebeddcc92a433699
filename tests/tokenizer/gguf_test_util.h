// Test helpers for GGUF vocabularies: write a GgufVocab as a GGUF file (no
// tensors, only the tokenizer.ggml.* keys that are set), and read goldens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf_builder.h"
#include "test_util.h"
#include "tokenizer/gguf_vocab.h"
#include "util/file.h"

namespace llmhost::testing {

inline std::string GgufImageOf(const GgufVocab& v) {
  GgufWriter body;
  uint64_t n_kv = 0;
  auto str = [&](const std::string& k, const std::string& s) {
    body.KvStr(k, s);
    ++n_kv;
  };
  auto u32 = [&](const std::string& k, std::optional<int64_t> id) {
    if (!id) return;
    body.KvU32(k, static_cast<uint32_t>(*id));
    ++n_kv;
  };
  auto boolean = [&](const std::string& k, std::optional<bool> b) {
    if (!b) return;
    body.KvBool(k, *b);
    ++n_kv;
  };
  str("general.architecture", "llama");
  if (!v.model.empty()) str("tokenizer.ggml.model", v.model);
  if (!v.pre.empty()) str("tokenizer.ggml.pre", v.pre);
  body.KvStrArray("tokenizer.ggml.tokens", v.tokens);
  ++n_kv;
  if (!v.scores.empty()) {
    body.Str("tokenizer.ggml.scores").U32(9).U32(6).U64(v.scores.size());  // array of f32
    for (float s : v.scores) body.Put(s);
    ++n_kv;
  }
  if (!v.token_types.empty()) {
    body.Str("tokenizer.ggml.token_type").U32(9).U32(5).U64(v.token_types.size());  // array of i32
    for (int32_t t : v.token_types) body.Put(t);
    ++n_kv;
  }
  if (!v.merges.empty()) {
    body.KvStrArray("tokenizer.ggml.merges", v.merges);
    ++n_kv;
  }
  u32("tokenizer.ggml.bos_token_id", v.bos_id);
  u32("tokenizer.ggml.eos_token_id", v.eos_id);
  u32("tokenizer.ggml.unknown_token_id", v.unk_id);
  boolean("tokenizer.ggml.add_bos_token", v.add_bos);
  boolean("tokenizer.ggml.add_eos_token", v.add_eos);
  boolean("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  GgufWriter w;
  w.Header(3, 0, n_kv);
  w.bytes += body.bytes;
  w.Align(32);
  return w.bytes;
}

// Writes `v` to dir/name and returns the path ("" on failure).
inline std::string WriteVocabGguf(const std::string& dir, const std::string& name, const GgufVocab& v) {
  std::string path = JoinPath(dir, name);
  return WriteFileAtomic(path, GgufImageOf(v)).ok() ? path : "";
}

}  // namespace llmhost::testing
