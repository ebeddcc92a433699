#include "engine/forced_tokens.h"

#include <algorithm>
#include <string>

namespace llmhost {
namespace {

// Non-ASCII probes: letters of a few scripts, a symbol, an emoji.
constexpr const char* kWideProbes[] = {"\xC3\xA9", "\xD0\xB8", "\xE4\xB8\xAD", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};

}  // namespace

std::vector<int32_t> StableForcedTokens(const Tokenizer& tokenizer, const grammar::TokenVocab& vocab,
                                        std::string_view forced, const grammar::Matcher& after) {
  std::vector<int32_t> tokens = tokenizer.Encode(forced, /*add_special=*/false);
  // 1. The encoding spells the forced bytes.
  std::string spelled;
  for (int32_t id : tokens) {
    if (id < 0 || static_cast<size_t>(id) >= vocab.size() || vocab.is_special(id)) return {};
    spelled += vocab.bytes(id);
  }
  if (spelled != forced) return {};
  // 2. Every probe the grammar allows next keeps a prefix of it.
  size_t keep = tokens.size();
  auto check = [&](std::string_view probe) {
    if (keep == 0 || !grammar::Matcher(after).AcceptBytes(probe)) return;
    std::string text(forced);
    text += probe;
    std::vector<int32_t> with = tokenizer.Encode(text, /*add_special=*/false);
    size_t same = 0;
    while (same < keep && same < with.size() && with[same] == tokens[same]) ++same;
    keep = same;
  };
  for (int b = 0x01; b < 0x80; ++b) check(std::string(1, static_cast<char>(b)));
  for (const char* probe : kWideProbes) check(probe);
  // 3. The last token of F may still join what follows, unless nothing does.
  if (keep == tokens.size() && !after.IsTerminated()) --keep;
  tokens.resize(std::min(keep, kMaxForcedTokens));
  return tokens;
}

}  // namespace llmhost
