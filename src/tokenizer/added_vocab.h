// Added tokens (tokenizer.json "added_tokens"): strings matched in the input
// before the model runs. Tokens with normalized=false are found in the raw
// text; those with normalized=true in each normalized segment. Matching is
// leftmost-longest (as HF's Aho-Corasick), with the single_word, lstrip and
// rstrip rules applied to each match.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::tok {

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// One split of the input: a token match (id >= 0) or text to tokenize.
struct Segment {
  size_t begin, end;  // byte range in the text that was split
  TokenId id;         // -1 for plain text
};

class AddedMatcher {
 public:
  // `contents` are the strings to find; `tokens[i]` describes contents[i].
  void Build(const std::vector<std::string>& contents, const std::vector<const AddedToken*>& tokens);
  bool empty() const { return tokens_.empty(); }
  // Splits `text` into token matches and the text between them (no empties).
  std::vector<Segment> Split(std::string_view text) const;

 private:
  // Leftmost-longest match starting exactly at `pos`: index into tokens_, -1.
  int LongestAt(std::string_view text, size_t pos, size_t* len) const;

  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t token = -1;
  };
  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};
  std::vector<const AddedToken*> tokens_;
};

Result<std::vector<AddedToken>> ParseAddedTokens(const Json& j, const std::string& ctx);

}  // namespace llmhost::tok
