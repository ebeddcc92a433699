// GrammarCache: one loaded model's compiled grammars, keyed by what they
// were built from (the caller's key: the constraint's kind, options and
// text), so that requests repeating a schema skip the compile; and the
// model's TokenVocab, built once on first use.
//
//   GrammarCache cache(tokenizer, eos_ids);
//   auto g = cache.Get("json_schema\n" + schema_text, [&](Grammar& g, const TokenVocab& v) {
//     return AddJsonSchema(g, schema);
//   });
//
// Bounded: the least recently used entry goes when `capacity` is passed.
// Keys are held as SHA-256 digests (request texts may be large). A failed
// build or compile is not cached (its error goes to the caller).
//
// Thread-safe: requests of one model come from many HTTP threads. A build
// and compile run outside the lock (two misses of one key may both compile;
// the first stored wins).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"
#include "util/sha256.h"
#include "util/status.h"

namespace llmhost::grammar {

struct GrammarCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // compiles, failed ones included
  size_t entries = 0;
};

class GrammarCache {
 public:
  static constexpr size_t kDefaultCapacity = 64;
  // `tokenizer` must outlive the cache; `eos_ids` end a generation (the
  // engine's stop ids).
  GrammarCache(const Tokenizer* tokenizer, std::vector<TokenId> eos_ids, size_t capacity = kDefaultCapacity);

  std::shared_ptr<const TokenVocab> vocab();

  // Sets the root of an empty Grammar (`vocab` resolves special tokens).
  using Builder = std::function<Result<RuleId>(Grammar& grammar, const TokenVocab& vocab)>;
  // The grammar compiled for `key`: cached, or built and compiled now.
  Result<std::shared_ptr<const CompiledGrammar>> Get(std::string_view key, const Builder& build);

  GrammarCacheStats stats() const;

 private:
  struct DigestHash {
    size_t operator()(const Sha256Digest& d) const {
      size_t h;
      static_assert(sizeof(h) <= sizeof(Sha256Digest));
      std::memcpy(&h, d.data(), sizeof(h));
      return h;
    }
  };
  using Lru = std::list<std::pair<Sha256Digest, std::shared_ptr<const CompiledGrammar>>>;

  const Tokenizer* tokenizer_;
  std::vector<TokenId> eos_ids_;
  size_t capacity_;
  std::once_flag vocab_once_;
  std::shared_ptr<const TokenVocab> vocab_;
  mutable std::mutex mu_;
  Lru lru_;  // most recently used first
  std::unordered_map<Sha256Digest, Lru::iterator, DigestHash> index_;
  GrammarCacheStats stats_;
};

}  // namespace llmhost::grammar
