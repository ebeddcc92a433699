#include "grammar/grammar_cache.h"

#include <algorithm>
#include <utility>

namespace llmhost::grammar {

GrammarCache::GrammarCache(const Tokenizer* tokenizer, std::vector<TokenId> eos_ids, size_t capacity)
    : tokenizer_(tokenizer), eos_ids_(std::move(eos_ids)), capacity_(std::max<size_t>(capacity, 1)) {}

std::shared_ptr<const TokenVocab> GrammarCache::vocab() {
  std::call_once(vocab_once_, [this] { vocab_ = TokenVocab::FromTokenizer(*tokenizer_, eos_ids_); });
  return vocab_;
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::Get(std::string_view key, const Builder& build) {
  const Sha256Digest digest = Sha256Of(key);
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = index_.find(digest); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      return it->second->second;
    }
    ++stats_.misses;
  }
  std::shared_ptr<const TokenVocab> v = vocab();
  Grammar g;
  ASSIGN_OR_RETURN(RuleId root, build(g, *v));
  g.SetRoot(root);
  ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, Compile(g, v));
  std::lock_guard<std::mutex> lk(mu_);
  if (auto it = index_.find(digest); it != index_.end()) return it->second->second;  // a concurrent miss won
  lru_.emplace_front(digest, compiled);
  index_[digest] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  stats_.entries = lru_.size();
  return compiled;
}

GrammarCacheStats GrammarCache::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

}  // namespace llmhost::grammar
