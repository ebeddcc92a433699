// Fuzzes the GBNF parser and the grammar compiler and matcher: any input is
// parsed; what parses is compiled against a small vocabulary (bytes, a token
// that splits a UTF-8 character, two special tokens, an EOS) and walked for a
// few steps, each mask checked against accepting its tokens on copies. Any
// input must give a result or an error, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace {

using namespace llmhost;
using namespace llmhost::grammar;

const std::shared_ptr<const TokenVocab>& Vocab() {
  static const auto vocab = TokenVocab::FromBytes(
      {"a", "b", "ab", "ba", "{", "}", "[", "]", "\"", ",", " ", "\n", "0", "1", "x\"", "\",", "\xC3", "\xA9", "\xC3\xA9",
       "\xE2\x82\xAC", "aaaa", "<s1>", "<s2>", "</s>"},
      {21, 22, 23}, {23});
  return vocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& vocab = Vocab();
  Grammar g;
  Result<RuleId> root = AddGbnf(g, text, vocab.get());
  if (!root.ok()) return 0;
  g.SetRoot(*root);
  CompileOptions options;
  options.max_stacks = 64;
  auto compiled = Compile(g, vocab, options);
  if (!compiled.ok()) return 0;
  Matcher m(*compiled);
  std::vector<uint32_t> mask(MaskWords(vocab->size()));
  uint32_t pick = size;
  for (int step = 0; step < 8 && !m.IsTerminated(); ++step) {
    if (!m.FillNextTokenMask(mask).ok()) break;
    std::vector<TokenId> allowed;
    for (size_t t = 0; t < vocab->size(); ++t) {
      TokenId id = static_cast<TokenId>(t);
      bool in_mask = MaskAllows(mask, id);
      if (in_mask) allowed.push_back(id);
      // A token is in the mask exactly when accepting it succeeds (unless
      // the stack limit stops the copy), and whenever its bytes are (a
      // <[id]> reference may also allow it as a token).
      if (!vocab->is_eos(id)) {
        Matcher by_token = m;
        Status st = by_token.AcceptToken(id);
        bool exhausted = st.code() == StatusCode::kResourceExhausted;
        Matcher by_bytes = m;
        bool bytes_ok = !vocab->is_special(id) && by_bytes.AcceptBytes(vocab->bytes(id));
        if (!exhausted && (st.ok() != in_mask || (bytes_ok && !in_mask))) {
          std::fprintf(stderr, "mask disagrees with accepting token %zu\n", t);
          std::abort();
        }
      }
    }
    if (allowed.empty()) break;
    pick = pick * 1103515245u + 12345u;
    if (!m.AcceptToken(allowed[pick % allowed.size()]).ok()) break;
    (void)m.ForcedBytes();
  }
  return 0;
}
