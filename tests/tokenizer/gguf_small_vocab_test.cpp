// GGUF vocabularies built by hand (always present, no ../shared): a small
// SentencePiece vocabulary whose expected ids are worked out below from the
// scores, a small byte-level BPE vocabulary per pre-tokenizer, and malformed
// files that must fail with an error naming the problem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/gguf_test_util.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace llmhost::gguf_small_vocab_test {
namespace {

using Ids = std::vector<TokenId>;

const char kSp[] = "\xE2\x96\x81";  // U+2581

std::string Sp(const std::string& s) { return kSp + s; }

// <unk> <s> </s>, 256 byte tokens, then pieces with scores:
//   259 ▁, 260 a, 261 b, 262 c (single characters, never merge results),
//   263 ▁a (-1), 264 ab (-2), 265 ▁ab (-3), 266 bc (-0.5).
GgufVocab SmallSpm() {
  GgufVocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {kGgufTokenUnknown, kGgufTokenControl, kGgufTokenControl};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.tokens.push_back(name);
    v.token_types.push_back(kGgufTokenByte);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  const std::pair<std::string, float> pieces[] = {{kSp, -1000}, {"a", -1000}, {"b", -1000}, {"c", -1000},
                                                  {Sp("a"), -1},  {"ab", -2},     {Sp("ab"), -3}, {"bc", -0.5f}};
  for (const auto& [t, s] : pieces) {
    v.tokens.push_back(t);
    v.scores.push_back(s);
    v.token_types.push_back(kGgufTokenNormal);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

std::unique_ptr<Tokenizer> Load(const GgufVocab& v, const std::string& name = "vocab.gguf") {
  testing::ScopedTempDir dir;
  std::string path = testing::WriteVocabGguf(dir.path(), name, v);
  auto tok = TokenizerFromGguf(path);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(GgufSmallSpm, MergesFollowScores) {
  auto tok = Load(SmallSpm());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->VocabSize(), 267u);
  // "▁ab▁abc": bc (-0.5) first, then ▁a (-1) at both places, then ▁a+b (-3).
  EXPECT_EQ(tok->Encode("ab abc", false), (Ids{265, 263, 266}));
  EXPECT_EQ(tok->Encode("ab abc", true), (Ids{1, 265, 263, 266}));
  // "abc" alone: ▁ a b c -> bc, then ▁a; (▁a, bc) is no piece.
  EXPECT_EQ(tok->Encode("abc", false), (Ids{263, 266}));
  // é is not a piece: its UTF-8 bytes C3 A9 become <0xC3> <0xA9> (id = byte + 3).
  EXPECT_EQ(tok->Encode("\xC3\xA9", false), (Ids{259, 0xC3 + 3, 0xA9 + 3}));
  // Control tokens in the text are matched; the segment after one gets its
  // own prefix space (HF's legacy Llama normalizer, llama.cpp does the same).
  EXPECT_EQ(tok->Encode("<s>ab", false), (Ids{1, 265}));
}

TEST(GgufSmallSpm, DecodeStripsThePrefixSpace) {
  auto tok = Load(SmallSpm());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Decode(Ids{265, 263, 266}, false), "ab abc");
  EXPECT_EQ(tok->Decode(Ids{1, 265, 263, 266}, false), "<s> ab abc");
  EXPECT_EQ(tok->Decode(Ids{1, 265, 263, 266}, true), "ab abc");
  EXPECT_EQ(tok->Decode(Ids{259, 0xC3 + 3, 0xA9 + 3}, false), "\xC3\xA9");
  EXPECT_EQ(tok->Decode(Ids{0xC3 + 3}, false), "\xEF\xBF\xBD");  // a lone byte: U+FFFD
  EXPECT_TRUE(tok->IsSpecial(1));
  EXPECT_TRUE(tok->IsSpecial(0));
  EXPECT_FALSE(tok->IsSpecial(265));
  EXPECT_EQ(tok->SpecialPrefixIds(), (Ids{1}));
}

TEST(GgufSmallSpm, FlagsFromMetadata) {
  GgufVocab v = SmallSpm();
  v.add_space_prefix = false;
  v.add_bos = false;
  v.add_eos = true;
  auto tok = Load(v);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("ab", true), (Ids{264, 2}));
  EXPECT_EQ(tok->Encode(" ab", false), (Ids{265}));
  EXPECT_EQ(tok->Decode(Ids{265}, false), " ab");  // no prefix: nothing to strip
}

// Old files have no token types: the BOS/EOS/UNK they name are still
// special tokens (as in HF's tokenizer.json), bytes still fall back.
TEST(GgufSmallSpm, WithoutTokenTypes) {
  GgufVocab v = SmallSpm();
  v.token_types.clear();
  auto tok = Load(v);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("<s>ab</s>", false), (Ids{1, 265, 2}));
  EXPECT_TRUE(tok->IsSpecial(1) && tok->IsSpecial(2) && tok->IsSpecial(0));
  EXPECT_EQ(tok->Encode("\xC3\xA9", false), (Ids{259, 0xC3 + 3, 0xA9 + 3}));
  EXPECT_EQ(tok->Decode(Ids{1, 265, 2}, true), "ab");
}

TEST(GgufSmallSpm, OutOfRangeSpecialIdsFallBack) {
  GgufVocab v = SmallSpm();
  v.bos_id = 4294967295;  // stories260K writes -1 as uint32 for absent ids
  v.eos_id = 4294967295;
  auto tok = Load(v);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("ab", true), (Ids{1, 265}));  // llama.cpp's default BOS = 1
}

// GPT-2's byte -> printable character table (bytes_to_unicode).
std::vector<std::string> ByteLevelAlphabet() {
  std::vector<std::string> out(256);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
    std::string s;
    if (cp < 0x80) s.push_back(static_cast<char>(cp));
    else {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    out[b] = s;
  }
  return out;
}

// Byte tokens 0..255, merged tokens 256.., then <|endoftext|> (control) and
// <tool> (user-defined).
GgufVocab SmallGpt2(const std::string& pre) {
  GgufVocab v;
  v.model = "gpt2";
  v.pre = pre;
  v.tokens = ByteLevelAlphabet();
  const char* merges[] = {"3 4", "1 2", "12 3", "4 5", "h i", "\xC4\xA0 t", "\xC4\xA0t h", "\xC4\xA0th e", "r e",
                          "\xC4\xA0the re"};
  for (const char* m : merges) {
    std::string s = m;
    size_t sp = s.find(' ');
    v.tokens.push_back(s.substr(0, sp) + s.substr(sp + 1));
    v.merges.push_back(s);
  }
  v.token_types.assign(v.tokens.size(), kGgufTokenNormal);
  v.tokens.push_back("<|endoftext|>");
  v.token_types.push_back(kGgufTokenControl);
  v.tokens.push_back("<tool>");
  v.token_types.push_back(kGgufTokenUserDefined);
  v.bos_id = 266;
  v.eos_id = 266;
  return v;
}
// Token ids of SmallGpt2's merged tokens.
enum : TokenId { k34 = 256, k12, k123, k45, kHi, kGt, kGth, kGthe, kRe, kGthere, kEot, kTool };

TEST(GgufSmallGpt2, MergesAndSpecialTokens) {
  auto tok = Load(SmallGpt2("gpt-2"));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("hi there", false), (Ids{kHi, kGthere}));
  EXPECT_EQ(tok->Encode("hi<|endoftext|>there<tool>", false), (Ids{kHi, kEot, 't', 'h', 'e', kRe, kTool}));
  EXPECT_EQ(tok->Decode(Ids{kHi, kEot, kGthere, kTool}, false), "hi<|endoftext|> there<tool>");
  EXPECT_EQ(tok->Decode(Ids{kHi, kEot, kGthere, kTool}, true), "hi there<tool>");
  EXPECT_TRUE(tok->IsSpecial(kEot));
  EXPECT_FALSE(tok->IsSpecial(kTool));
  // gpt-2 adds no BOS by default.
  EXPECT_EQ(tok->Encode("hi", true), (Ids{kHi}));
  // Bytes outside ASCII go through the byte-level alphabet.
  EXPECT_EQ(tok->Encode("\xC3\xA9", false), (Ids{0xC3, 0xA9}));
  EXPECT_EQ(tok->Decode(Ids{0xC3, 0xA9}, false), "\xC3\xA9");
}

// The digits show which regex split the text: gpt-2 keeps "12345" whole,
// llama-bpe cuts it into 3-digit groups, qwen2 into single digits.
TEST(GgufSmallGpt2, PreTokenizerFollowsTokenizerGgmlPre) {
  auto gpt2 = Load(SmallGpt2("gpt-2"));
  auto llama3 = Load(SmallGpt2("llama-bpe"));
  auto qwen2 = Load(SmallGpt2("qwen2"));
  ASSERT_TRUE(gpt2 && llama3 && qwen2);
  EXPECT_EQ(gpt2->Encode("12345", false), (Ids{k12, k34, '5'}));
  EXPECT_EQ(llama3->Encode("12345", false), (Ids{k123, k45}));
  EXPECT_EQ(qwen2->Encode("12345", false), (Ids{'1', '2', '3', '4', '5'}));
  // llama-bpe adds BOS by default (llama.cpp), unless the file says otherwise.
  EXPECT_EQ(llama3->Encode("hi", true), (Ids{266, kHi}));
  GgufVocab no_bos = SmallGpt2("llama-bpe");
  no_bos.add_bos = false;
  EXPECT_EQ(Load(no_bos)->Encode("hi", true), (Ids{kHi}));
  // qwen2 normalizes to NFC as Qwen's tokenizer.json does: e + U+0301 -> é.
  EXPECT_EQ(qwen2->Encode("e\xCC\x81", false), (Ids{0xC3, 0xA9}));
  EXPECT_EQ(gpt2->Encode("e\xCC\x81", false), (Ids{'e', 0xCC, 0x81}));
  // An unknown name falls back to llama.cpp's default regexes.
  EXPECT_NE(Load(SmallGpt2("no-such-pre")), nullptr);
}

TEST(GgufSmallGpt2, FromPathFindsTheOnlyGgufInADirectory) {
  testing::ScopedTempDir tmp;
  const std::string& dir = tmp.path();
  ASSERT_FALSE(testing::WriteVocabGguf(dir, "model.gguf", SmallGpt2("gpt-2")).empty());
  auto tok = Tokenizer::FromPath(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("hi there", false), (Ids{kHi, kGthere}));
  ASSERT_FALSE(testing::WriteVocabGguf(dir, "other.gguf", SmallGpt2("gpt-2")).empty());
  auto two = Tokenizer::FromPath(dir);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find(".gguf"), std::string::npos) << two.status().ToString();
}

// Loads `v` and expects an error whose text contains `want`.
void ExpectError(const GgufVocab& v, const std::string& want) {
  testing::ScopedTempDir dir;
  std::string path = testing::WriteVocabGguf(dir.path(), "bad.gguf", v);
  auto tok = TokenizerFromGguf(path);
  ASSERT_FALSE(tok.ok()) << "expected an error containing '" << want << "'";
  EXPECT_NE(tok.status().message().find(want), std::string::npos) << tok.status().ToString();
  EXPECT_NE(tok.status().message().find(path), std::string::npos) << tok.status().ToString();
}

TEST(GgufVocabErrors, NameTheProblem) {
  GgufVocab v = SmallSpm();
  v.model = "";
  ExpectError(v, "tokenizer.ggml.model");
  v.model = "t5";
  ExpectError(v, "'t5' is not supported");
  v = SmallSpm();
  v.scores.pop_back();
  ExpectError(v, "tokenizer.ggml.scores");
  v = SmallSpm();
  v.token_types.push_back(1);
  ExpectError(v, "tokenizer.ggml.token_type");
  v = SmallSpm();
  v.tokens[262] = "a";
  ExpectError(v, "appears at ids 260 and 262");
  GgufVocab g = SmallGpt2("gpt-2");
  g.merges.clear();
  ExpectError(g, "tokenizer.ggml.merges");
  g = SmallGpt2("gpt-2");
  g.merges[0] = "34";
  ExpectError(g, "tokenizer.ggml.merges[0]");
}

TEST(GgufVocabErrors, MergesOfUnknownTokensAreDropped) {
  GgufVocab g = SmallGpt2("gpt-2");
  g.merges.insert(g.merges.begin(), "x y");  // "xy" is no token: this merge can never apply
  auto tok = Load(g);
  ASSERT_NE(tok, nullptr);
  // " xy": Ġ (the token of byte 0x20), x, y.
  EXPECT_EQ(tok->Encode("hi there xy", false), (Ids{kHi, kGthere, ' ', 'x', 'y'}));
}

TEST(GgufVocabErrors, NotAGgufOrTruncated) {
  testing::ScopedTempDir tmp;
  const std::string& dir = tmp.path();
  std::string image = testing::GgufImageOf(SmallSpm());
  std::string path = JoinPath(dir, "cut.gguf");
  ASSERT_TRUE(WriteFileAtomic(path, std::string_view(image).substr(0, image.size() / 2)).ok());
  auto tok = TokenizerFromGguf(path);
  EXPECT_FALSE(tok.ok());
  EXPECT_FALSE(TokenizerFromGguf(JoinPath(dir, "missing.gguf")).ok());
}

}  // namespace
}  // namespace llmhost::gguf_small_vocab_test
