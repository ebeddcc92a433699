// StreamDecoder against the Hugging Face goldens: feeding a case's ids one at
// a time must give valid UTF-8 chunks, every emitted prefix must be a prefix
// of the golden decode (text is never taken back), and the chunks plus
// Finish() must equal `decoded` / `decoded_skip_special`. Runs on all five
// tokenizers of ../shared (byte-level BPE, SentencePiece byte-fallback BPE,
// WordPiece, Unigram) and on the copies in tests/data (always present); split
// characters (emoji, CJK across byte tokens) are tested on small GGUF
// vocabularies built in the test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/gguf_test_util.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/utf8.h"

namespace llmhost::stream_decoder_test {
namespace {

using Json = nlohmann::json;
using Ids = std::vector<TokenId>;

std::string Quote(const std::string& s) { return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace); }

const std::string kReplacement = "\xEF\xBF\xBD";

bool EndsWithReplacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, kReplacement) == 0;
}

struct StreamResult {
  std::vector<std::string> chunks;  // one per Add(), then Finish()
  std::string text;
  int empty_adds = 0;  // Add() calls that held everything back
};

StreamResult Stream(const Tokenizer& tok, const Ids& ids, bool skip_special) {
  StreamDecoder sd(tok, skip_special);
  StreamResult r;
  for (TokenId id : ids) {
    r.chunks.push_back(sd.Add(id));
    r.empty_adds += r.chunks.back().empty();
    r.text += r.chunks.back();
  }
  r.chunks.push_back(sd.Finish());
  r.text += r.chunks.back();
  EXPECT_EQ(sd.text(), r.text);
  return r;
}

// Checks one stream against the full decode `want`; returns false on failure.
bool CheckStream(const Tokenizer& tok, const Ids& ids, bool skip, const std::string& want, const std::string& what) {
  StreamResult r = Stream(tok, ids, skip);
  bool ok = true;
  std::string so_far;
  for (size_t i = 0; i < r.chunks.size(); ++i) {
    const std::string& c = r.chunks[i];
    if (!utf8::IsValid(c)) {
      ADD_FAILURE() << what << ": chunk " << i << " is not valid UTF-8: " << Quote(c);
      ok = false;
    }
    so_far += c;
    if (want.compare(0, so_far.size(), so_far) != 0) {
      ADD_FAILURE() << what << ": after chunk " << i << " the stream " << Quote(so_far)
                    << " is not a prefix of the decode " << Quote(want);
      return false;
    }
  }
  if (r.text != want) {
    ADD_FAILURE() << what << ": stream " << Quote(r.text) << " != decode " << Quote(want);
    ok = false;
  }
  // Nothing is held back at the end unless the decode ends in U+FFFD (which
  // is indistinguishable from a character still being assembled).
  if (!EndsWithReplacement(want) && !r.chunks.back().empty()) {
    ADD_FAILURE() << what << ": Finish() had to release " << Quote(r.chunks.back());
    ok = false;
  }
  return ok;
}

// Streams every case of golden `dir/name.json`; returns the number of cases.
int CheckGolden(const std::string& dir, const std::string& name) {
  auto text = ReadFileToString(JoinPath(dir, name + ".json"));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return 0;
  Json golden = Json::parse(*text);
  auto tok = Tokenizer::FromPath(JoinPath(dir, golden["tokenizer"].get<std::string>()));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return 0;
  int cases = 0, failures = 0;
  for (const Json& c : golden["cases"]) {
    ++cases;
    Ids ids = c["ids"].get<Ids>();
    std::string what = name + " " + Quote(c["text"].get<std::string>());
    bool ok = CheckStream(**tok, ids, false, c["decoded"].get<std::string>(), what) &&
              CheckStream(**tok, ids, true, c["decoded_skip_special"].get<std::string>(), what + " (skip_special)");
    failures += !ok;
  }
  std::printf("[stream] %s: %d/%d cases stream exactly\n", name.c_str(), cases - failures, cases);
  return cases;
}

class SharedGoldenStream : public ::testing::TestWithParam<const char*> {};

TEST_P(SharedGoldenStream, ChunksConcatenateToTheDecode) {
  SKIP_IF_NO_SHARED();
  EXPECT_GT(CheckGolden(testing::SharedDir() + "/reference/tokenizers", GetParam()), 50);
}

INSTANTIATE_TEST_SUITE_P(AllFive, SharedGoldenStream,
                         ::testing::Values("llama3", "qwen3", "llama2", "wordpiece", "unigram"));

class LocalGoldenStream : public ::testing::TestWithParam<const char*> {};

TEST_P(LocalGoldenStream, ChunksConcatenateToTheDecode) {
  EXPECT_GT(CheckGolden(testing::TestDataDir() + "/tokenizer", GetParam()), 50);
}

INSTANTIATE_TEST_SUITE_P(InRepo, LocalGoldenStream, ::testing::Values("wordpiece", "unigram"));

// Emoji, CJK and accented text: several tokens per character.
const char* const kSplitTexts[] = {
    "\xF0\x9F\x98\x80",                                              // 😀
    "Hi \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 there",                     // Hi 😀🎉 there
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87",  // 日本語の文
    "na\xC3\xAFve caf\xC3\xA9 \xE2\x82\xAC" "5",                     // naïve café €5
    "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 family",  // ZWJ sequence
};

// Streams each split text through `tok`; returns the number of Add() calls
// that held text back (a split character was waiting for its last byte).
int CheckSplitTexts(const Tokenizer& tok, const std::string& name) {
  int held = 0;
  for (const char* t : kSplitTexts) {
    for (bool special : {false, true}) {
      Ids ids = tok.Encode(t, special);
      for (bool skip : {false, true}) {
        std::string want = tok.Decode(ids, skip);
        EXPECT_TRUE(CheckStream(tok, ids, skip, want, name + " " + Quote(t)));
        held += Stream(tok, ids, skip).empty_adds;
      }
    }
  }
  return held;
}

TEST(StreamDecoderSplitChars, SharedTokenizers) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/reference/tokenizers/";
  for (const char* name : {"tok_llama3.json", "tok_qwen3.json", "tok_llama2.json"}) {
    auto tok = Tokenizer::FromPath(dir + name);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    // All three split emoji over several tokens, so something is held back.
    EXPECT_GT(CheckSplitTexts(**tok, name), 0) << name;
  }
}

// In-repo vocabularies with byte tokens: a byte-level BPE without merges
// (every byte its own token) and a SentencePiece vocabulary whose only pieces
// are ASCII letters (everything else byte fallback).
std::unique_ptr<Tokenizer> ByteLevelOnly() {
  GgufVocab v;
  v.model = "gpt2";
  v.pre = "llama-bpe";
  v.add_bos = false;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {  // GPT-2's byte -> character table
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    std::string s;
    utf8::Append(&s, printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++));
    v.tokens.push_back(s);
  }
  v.tokens.push_back("h" "i");
  v.merges = {"h i"};
  v.tokens.push_back("<|end|>");
  v.token_types.assign(v.tokens.size(), kGgufTokenNormal);
  v.token_types.back() = kGgufTokenControl;
  testing::ScopedTempDir tmp;
  auto tok = TokenizerFromGguf(testing::WriteVocabGguf(tmp.path(), "bl.gguf", v));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::unique_ptr<Tokenizer> SpmBytesOnly() {
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
  v.tokens.push_back("\xE2\x96\x81");
  v.token_types.push_back(kGgufTokenNormal);
  for (char c = 'a'; c <= 'z'; ++c) {
    v.tokens.push_back(std::string(1, c));
    v.token_types.push_back(kGgufTokenNormal);
    v.tokens.push_back("\xE2\x96\x81" + std::string(1, c));
    v.token_types.push_back(kGgufTokenNormal);
  }
  v.scores.assign(v.tokens.size(), -1.0f);
  testing::ScopedTempDir tmp;
  auto tok = TokenizerFromGguf(testing::WriteVocabGguf(tmp.path(), "spm.gguf", v));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(StreamDecoderSplitChars, ByteLevelVocabulary) {
  auto tok = ByteLevelOnly();
  ASSERT_NE(tok, nullptr);
  EXPECT_GT(CheckSplitTexts(*tok, "byte-level"), 0);
}

TEST(StreamDecoderSplitChars, ByteFallbackVocabulary) {
  auto tok = SpmBytesOnly();
  ASSERT_NE(tok, nullptr);
  EXPECT_GT(CheckSplitTexts(*tok, "byte-fallback"), 0);
}

TEST(StreamDecoderSplitChars, HoldsBackUntilTheLastByte) {
  auto tok = ByteLevelOnly();
  ASSERT_NE(tok, nullptr);
  StreamDecoder sd(*tok, false);
  EXPECT_EQ(sd.Add('h'), "h");
  EXPECT_EQ(sd.Add(0xF0), "");  // 😀 = F0 9F 98 80
  EXPECT_EQ(sd.Add(0x9F), "");
  EXPECT_EQ(sd.Add(0x98), "");
  EXPECT_EQ(sd.Add(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(sd.Add('!'), "!");
  EXPECT_EQ(sd.Finish(), "");
  EXPECT_EQ(sd.text(), "h\xF0\x9F\x98\x80!");
}

// Bytes that never complete a character: the stream gives what the full
// decode gives (U+FFFD), once the next token shows the character is broken,
// or at Finish().
TEST(StreamDecoderSplitChars, BrokenCharactersMatchTheDecode) {
  auto bl = ByteLevelOnly();
  auto spm = SpmBytesOnly();
  ASSERT_TRUE(bl && spm);
  const TokenId kSpmE6 = 3 + 0xE6, kSpmA = 3 + 256 + 1 + 1;  // "<0xE6>", "▁a"
  for (const auto& [tok, ids] :
       std::vector<std::pair<Tokenizer*, Ids>>{{bl.get(), {0xE6, 'a'}},
                                               {bl.get(), {'a', 0xE6}},
                                               {bl.get(), {0xE6, 0x97, 'x', 0xA5}},
                                               {spm.get(), {kSpmE6, kSpmA}},
                                               {spm.get(), {kSpmA, kSpmE6}}}) {
    std::string want = tok->Decode(ids, false);
    EXPECT_NE(want.find(kReplacement), std::string::npos);
    EXPECT_EQ(Quote(Stream(*tok, ids, false).text), Quote(want)) << Json(ids).dump();
  }
}

// HF's ByteFallback decodes a run of byte tokens that ends in a broken
// character as one U+FFFD per byte, the complete "é" before it included. The
// stream emitted "é" as soon as it was complete and cannot take it back: it
// then emits the rest decoded on its own, still valid UTF-8 (cutting the new
// decode at the old length would split a U+FFFD).
TEST(StreamDecoderSplitChars, ByteFallbackRunThatBreaksAfterACompleteCharacter) {
  auto spm = SpmBytesOnly();
  ASSERT_NE(spm, nullptr);
  const TokenId kSpmA = 3 + 256 + 1 + 1;  // "▁a"
  Ids ids = {3 + 0xC3, 3 + 0xA9, 3 + 0xE6, kSpmA};
  EXPECT_EQ(spm->Decode(ids, false), kReplacement + kReplacement + kReplacement + " a");
  StreamResult r = Stream(*spm, ids, false);
  for (const std::string& c : r.chunks) EXPECT_TRUE(utf8::IsValid(c)) << Quote(c);
  EXPECT_EQ(Quote(r.text), Quote("\xC3\xA9" + kReplacement + " a"));
}

TEST(StreamDecoderSplitChars, SkippedSpecialTokens) {
  auto tok = SpmBytesOnly();
  ASSERT_NE(tok, nullptr);
  Ids ids = tok->Encode("ab cd", true);  // <s> ▁a b ▁c d
  ids.push_back(2);                       // </s>
  Ids more = tok->Encode("ef", false);
  ids.insert(ids.end(), more.begin(), more.end());
  for (bool skip : {false, true})
    EXPECT_TRUE(CheckStream(*tok, ids, skip, tok->Decode(ids, skip), "specials"));
  EXPECT_EQ(Stream(*tok, ids, true).text, "ab cd ef");
}

}  // namespace
}  // namespace llmhost::stream_decoder_test
