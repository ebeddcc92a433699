// GGUF vocabularies against references in ../shared (skipped without it):
//  (a) llama-tiny-f32.gguf (gpt2 / llama-bpe) against llama3-tiny's
//      tokenizer.json, the same tokenizer, and against the goldens' input ids;
//  (b) stories260K.gguf (llama / SentencePiece, 512 pieces) against the text
//      llama2.c produced and against llama2.c's encoding algorithm;
//  (c) the real Llama-2/Mistral, Llama-3 and Qwen3 tokenizers written as GGUF
//      vocabularies (as llama.cpp's converter writes them) against the Hugging
//      Face goldens of reference/tokenizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "test_util.h"
#include "tokenizer/gguf_test_util.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::gguf_vocab_test {
namespace {

using Json = nlohmann::json;
using Ids = std::vector<TokenId>;

std::string Quote(const std::string& s) { return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace); }
std::string Show(const Ids& ids) { return Json(ids).dump(); }

Json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? Json::parse(*text, nullptr, false) : Json();
}

std::unique_ptr<Tokenizer> MustLoad(const std::string& path) {
  auto tok = Tokenizer::FromPath(path);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// ---------------------------------------------------------------------------
// (a) llama-tiny GGUF vs llama3-tiny tokenizer.json.

TEST(GgufLlamaTiny, SameIdsAndTextAsTokenizerJson) {
  SKIP_IF_NO_SHARED();
  const std::string ref = testing::SharedDir() + "/reference";
  auto gguf = MustLoad(ref + "/models/llama-tiny-gguf/llama-tiny-f32.gguf");
  auto hf = MustLoad(ref + "/models/llama3-tiny/tokenizer.json");
  ASSERT_TRUE(gguf && hf);
  EXPECT_EQ(gguf->VocabSize(), hf->VocabSize());

  std::vector<std::string> texts;
  Json golden = ReadJson(ref + "/golden/llama3-tiny.json");
  for (auto& [name, p] : golden["prompts"].items())
    if (p.contains("text")) texts.push_back(p["text"].get<std::string>());
  ASSERT_EQ(texts.size(), 3u);
  for (const char* g : {"llama3", "qwen3", "llama2", "wordpiece", "unigram"}) {
    Json cases = ReadJson(ref + "/tokenizers/" + g + ".json")["cases"];
    for (const Json& c : cases) texts.push_back(c["text"].get<std::string>());
  }

  int failures = 0;
  for (const std::string& t : texts) {
    for (bool special : {false, true}) {
      Ids want = hf->Encode(t, special), got = gguf->Encode(t, special);
      EXPECT_EQ(Show(got), Show(want)) << "add_special=" << special << " text " << Quote(t);
      failures += got != want;
    }
    Ids ids = hf->Encode(t, false);
    for (bool skip : {false, true}) {
      std::string want = hf->Decode(ids, skip), got = gguf->Decode(ids, skip);
      EXPECT_EQ(Quote(got), Quote(want)) << "skip_special=" << skip << " text " << Quote(t);
      failures += got != want;
    }
  }
  std::printf("[gguf] llama-tiny vs llama3-tiny tokenizer.json: %zu texts, %d mismatches\n", texts.size(),
              failures);
  EXPECT_GT(texts.size(), 300u);
}

// The GGUF goldens list the input ids transformers produced for the prompts.
TEST(GgufLlamaTiny, EncodesTheGoldenPrompts) {
  SKIP_IF_NO_SHARED();
  const std::string ref = testing::SharedDir() + "/reference";
  auto gguf = MustLoad(ref + "/models/llama-tiny-gguf/llama-tiny-f32.gguf");
  ASSERT_NE(gguf, nullptr);
  Json texts = ReadJson(ref + "/golden/llama3-tiny.json")["prompts"];
  Json want = ReadJson(ref + "/golden/llama-tiny-f32.json")["prompts"];
  for (const char* p : {"chat", "raw", "long"}) {
    Ids ids = gguf->Encode(texts[p]["text"].get<std::string>(), false);
    Ids golden = want[p]["input_ids"].get<Ids>();
    // "long" keeps the first 300 tokens of its text.
    if (std::string(p) == "long" && ids.size() > golden.size()) ids.resize(golden.size());
    EXPECT_EQ(Show(ids), Show(golden)) << p;
  }
  // add_bos_token is false in this file, so add_special adds nothing.
  EXPECT_EQ(gguf->Encode("hello", true), gguf->Encode("hello", false));
}

// ---------------------------------------------------------------------------
// (b) stories260K.

// llama2.c's encoder (run.c), the tokenizer the reference text was made
// with: "▁" + text with spaces as "▁", one symbol per character (bytes as
// <0xXX> when the character is no piece), then repeatedly merge the adjacent
// pair whose concatenation is the highest-scoring piece (leftmost on ties).
Ids Llama2cEncode(const std::vector<std::string>& pieces, const std::vector<double>& scores,
                  const std::string& text) {
  std::map<std::string, TokenId> id;
  for (size_t i = 0; i < pieces.size(); ++i) id.emplace(pieces[i], static_cast<TokenId>(i));
  std::string s = "\xE2\x96\x81";
  for (char c : text) s += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
  Ids ids;
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    unsigned char lead = static_cast<unsigned char>(s[i]);
    if (lead >= 0xF0) len = 4;
    else if (lead >= 0xE0) len = 3;
    else if (lead >= 0xC0) len = 2;
    std::string ch = s.substr(i, len);
    if (auto it = id.find(ch); it != id.end()) {
      ids.push_back(it->second);
    } else {
      for (unsigned char b : ch) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        ids.push_back(id.at(name));
      }
    }
    i += len;
  }
  while (true) {
    double best = -1e300;
    int best_i = -1;
    TokenId best_id = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      auto it = id.find(pieces[ids[i]] + pieces[ids[i + 1]]);
      if (it != id.end() && scores[it->second] > best) {
        best = scores[it->second];
        best_i = static_cast<int>(i);
        best_id = it->second;
      }
    }
    if (best_i < 0) break;
    ids[best_i] = best_id;
    ids.erase(ids.begin() + best_i + 1);
  }
  return ids;
}

std::vector<std::string> StoriesTexts(const std::string& expected) {
  std::vector<std::string> texts = {expected,
                                    "Once upon a time",
                                    "Lily and Ben went to the park to play with a ball.",
                                    "  two leading spaces and  double  spaces ",
                                    "Numbers 123 and 4567, punctuation!? \"quotes\" (parens)",
                                    "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 emoji",
                                    "line one\nline two\n\ttab"};
  size_t start = 0;
  while (start < expected.size()) {  // each line of the reference on its own
    size_t end = expected.find('\n', start);
    if (end == std::string::npos) end = expected.size();
    texts.push_back(expected.substr(start, end - start));
    start = end + 1;
  }
  return texts;
}

TEST(GgufStories260K, VocabularyAndReferenceText) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/models/stories260K";
  auto tok = MustLoad(dir + "/stories260K.gguf");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->VocabSize(), 512u);
  EXPECT_EQ(tok->IdToToken(1).value_or(""), "<s>");
  EXPECT_TRUE(tok->IsSpecial(1));
  EXPECT_TRUE(tok->IsSpecial(2));
  EXPECT_EQ(tok->IdToToken(3 + 0x0A).value_or(""), "<0x0A>");

  // expected.json holds the text llama2.c decoded from the generated ids
  // (the ids themselves are not in it; prompt_tokens is [BOS]). Its pieces
  // must all exist: encoding needs no byte fallback except for newlines, and
  // decoding BOS + those ids with skip_special gives the text back exactly
  // (the first piece's space is dropped, as llama2.c drops it after BOS).
  Json expected = ReadJson(dir + "/expected.json");
  const std::string text = expected["expected_text"].get<std::string>();
  ASSERT_EQ(expected["prompt_tokens"], Json::array({1}));
  Ids ids = tok->Encode(text, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  for (TokenId id : ids) {
    std::string piece = tok->IdToToken(id).value_or("?");
    if (piece.rfind("<0x", 0) == 0) {
      EXPECT_EQ(piece, "<0x0A>") << "byte fallback in the reference text";
    }
  }
  EXPECT_EQ(Quote(tok->Decode(ids, true)), Quote(text));
  EXPECT_EQ(Quote(tok->Decode(ids, false)), Quote("<s> " + text));
  EXPECT_EQ(Quote(tok->Decode(Ids(ids.begin() + 1, ids.end()), false)), Quote(text));
}

TEST(GgufStories260K, EncodesAsLlama2c) {
  SKIP_IF_NO_SHARED();
  const std::string dir = testing::SharedDir() + "/models/stories260K";
  auto tok = MustLoad(dir + "/stories260K.gguf");
  auto file = GgufFile::Open(dir + "/stories260K.gguf");
  ASSERT_TRUE(tok && file.ok());
  auto pieces = (*file)->GetStringArray("tokenizer.ggml.tokens");
  auto scores = (*file)->GetFloatArray("tokenizer.ggml.scores");
  ASSERT_TRUE(pieces.ok() && scores.ok());
  const std::string text = ReadJson(dir + "/expected.json")["expected_text"].get<std::string>();
  int n = 0;
  for (const std::string& t : StoriesTexts(text)) {
    Ids want = Llama2cEncode(*pieces, *scores, t);
    EXPECT_EQ(Show(tok->Encode(t, false)), Show(want)) << Quote(t);
    EXPECT_EQ(Quote(tok->Decode(want, false)), Quote(t)) << "round trip";
    ++n;
  }
  EXPECT_GT(n, 8);
}

// ---------------------------------------------------------------------------
// (c) Real tokenizers converted to GGUF vocabularies.

// The GGUF vocabulary llama.cpp's converter writes for an HF tokenizer.json:
// tokens by id, added tokens as CONTROL (special) or USER_DEFINED, byte
// pieces as BYTE, merges as "a b" (gpt2). SentencePiece scores are not in
// tokenizer.json; these reproduce the order of its merges (checked: HF's
// derivation from them gives exactly the file's 58,980 merges): -id, and
// -1e9 for the pieces made only of "▁" (lowest in the real model too).
GgufVocab VocabFromTokenizerJson(const Json& doc, const std::string& model, const std::string& pre) {
  GgufVocab v;
  v.model = model;
  v.pre = pre;
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;
  for (auto& [t, id] : doc["model"]["vocab"].items()) {
    int32_t type = model == "llama" && t.size() == 6 && t.rfind("<0x", 0) == 0 ? kGgufTokenByte : kGgufTokenNormal;
    by_id[id.get<int64_t>()] = {t, type};
  }
  std::string unk = doc["model"].value("unk_token", Json()).is_string() ? doc["model"]["unk_token"].get<std::string>() : "";
  for (const Json& a : doc["added_tokens"]) {
    std::string content = a["content"].get<std::string>();
    int32_t type = !a["special"].get<bool>() ? kGgufTokenUserDefined
                   : content == unk          ? kGgufTokenUnknown
                                             : kGgufTokenControl;
    by_id[a["id"].get<int64_t>()] = {content, type};
  }
  for (auto& [id, tt] : by_id) {
    EXPECT_EQ(id, static_cast<int64_t>(v.tokens.size())) << "ids are not contiguous";
    v.tokens.push_back(tt.first);
    v.token_types.push_back(tt.second);
  }
  if (model == "llama") {
    for (size_t id = 0; id < v.tokens.size(); ++id) {
      const std::string& t = v.tokens[id];
      bool all_space = t.size() >= 6 && t.size() % 3 == 0;
      for (size_t k = 0; all_space && k < t.size(); k += 3) all_space = t.compare(k, 3, "\xE2\x96\x81") == 0;
      v.scores.push_back(all_space ? -1e9f : -static_cast<float>(id));
    }
  } else {
    for (const Json& m : doc["model"]["merges"])
      v.merges.push_back(m.is_string() ? m.get<std::string>()
                                       : m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  return v;
}

struct RealCase {
  const char* golden;  // reference/tokenizers/<golden>.json
  const char* model;
  const char* pre;
  int64_t bos, eos;
  bool add_bos;  // as the golden's post-processor
};

class GgufFromRealTokenizer : public ::testing::TestWithParam<RealCase> {};

TEST_P(GgufFromRealTokenizer, MatchesHuggingFaceGolden) {
  SKIP_IF_NO_SHARED();
  const RealCase& rc = GetParam();
  const std::string dir = testing::SharedDir() + "/reference/tokenizers";
  Json golden = ReadJson(dir + "/" + rc.golden + ".json");
  Json doc = ReadJson(dir + "/" + golden["tokenizer"].get<std::string>());
  GgufVocab v = VocabFromTokenizerJson(doc, rc.model, rc.pre);
  v.bos_id = rc.bos;
  v.eos_id = rc.eos;
  v.add_bos = rc.add_bos;
  testing::ScopedTempDir tmp;  // a few MB: removed after loading
  std::string path = testing::WriteVocabGguf(tmp.path(), std::string(rc.golden) + ".gguf", v);
  auto tok = TokenizerFromGguf(path);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  int cases = 0, failures = 0;
  for (const Json& c : golden["cases"]) {
    ++cases;
    std::string text = c["text"].get<std::string>();
    Ids ids = c["ids"].get<Ids>();
    Ids got = (*tok)->Encode(text, false), got_special = (*tok)->Encode(text, true);
    std::string dec = (*tok)->Decode(ids, false), skip = (*tok)->Decode(ids, true);
    bool ok = got == ids && got_special == c["ids_with_special"].get<Ids>() &&
              dec == c["decoded"].get<std::string>() && skip == c["decoded_skip_special"].get<std::string>();
    failures += !ok;
    EXPECT_EQ(Show(got), Show(ids)) << rc.golden << " ids for " << Quote(text);
    EXPECT_EQ(Show(got_special), Show(c["ids_with_special"].get<Ids>())) << rc.golden << " with special for " << Quote(text);
    EXPECT_EQ(Quote(dec), Quote(c["decoded"].get<std::string>())) << rc.golden << " decoded for " << Quote(text);
    EXPECT_EQ(Quote(skip), Quote(c["decoded_skip_special"].get<std::string>())) << rc.golden << " skip for " << Quote(text);
  }
  std::printf("[gguf] %s as a GGUF vocabulary: %d/%d cases pass\n", rc.golden, cases - failures, cases);
  EXPECT_GT(cases, 50);
}

INSTANTIATE_TEST_SUITE_P(
    Real, GgufFromRealTokenizer,
    ::testing::Values(RealCase{"llama2", "llama", "", 1, 2, true},
                      RealCase{"llama3", "gpt2", "llama-bpe", 128000, 128001, false},
                      RealCase{"qwen3", "gpt2", "qwen2", 151643, 151645, false}),
    [](const ::testing::TestParamInfo<RealCase>& info) { return std::string(info.param.golden); });

}  // namespace
}  // namespace llmhost::gguf_vocab_test
