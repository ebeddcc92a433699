// Each normalizer, pre-tokenizer, decoder, model, post-processor and the
// added-token rules against Hugging Face tokenizers 0.23.2 on small
// configurations: tests/data/tokenizer/components.json was produced by HF's
// own Node binding (make_component_goldens.js beside it), not by llmhost.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

namespace llmhost::components_test {
namespace {

using nlohmann::json;

std::string Quote(const std::string& s) { return json(s).dump(); }

const json& Components() {
  static const json doc = [] {
    auto text = ReadFileToString(testing::TestDataDir() + "/tokenizer/components.json");
    return text.ok() ? json::parse(*text) : json();
  }();
  return doc;
}

// Runs every suite of one kind; returns how many cases ran.
int RunSuites(const std::string& kind) {
  int ran = 0;
  for (const json& suite : Components()["suites"]) {
    if (suite["kind"] != kind) continue;
    std::string name = suite["name"];
    SCOPED_TRACE("suite " + name);
    if (kind == "normalizer") {
      auto n = tok::ParseNormalizer(suite["component"], "normalizer");
      EXPECT_TRUE(n.ok()) << n.status().ToString();
      if (!n.ok()) continue;
      for (const json& c : suite["cases"]) {
        std::string text = c["text"];
        EXPECT_EQ(Quote((*n)->Normalize(text)), Quote(c["normalized"])) << name << " on " << Quote(text);
        ++ran;
      }
    } else if (kind == "pre_tokenizer") {
      auto p = tok::ParsePreTokenizer(suite["component"], "pre_tokenizer");
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      if (!p.ok()) continue;
      for (const json& c : suite["cases"]) {
        std::string text = c["text"];
        std::vector<tok::Piece> pieces;  // HF starts from no piece for ""
        if (!text.empty()) pieces.push_back(tok::Piece{text, true});
        (*p)->PreTokenize(&pieces);
        std::vector<std::string> got;
        for (const auto& piece : pieces) got.push_back(piece.text);
        EXPECT_EQ(json(got).dump(), c["pieces"].dump()) << name << " on " << Quote(text);
        ++ran;
      }
    } else if (kind == "decoder") {
      auto d = tok::ParseDecoder(suite["component"], "decoder");
      EXPECT_TRUE(d.ok()) << d.status().ToString();
      if (!d.ok()) continue;
      for (const json& c : suite["cases"]) {
        auto tokens = c["tokens"].get<std::vector<std::string>>();
        EXPECT_EQ(Quote((*d)->Decode(tokens)), Quote(c["text"])) << name << " on " << c["tokens"].dump();
        ++ran;
      }
    } else if (kind == "tokenizer") {
      auto t = Tokenizer::FromJson(suite["tokenizer"]);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (!t.ok()) continue;
      for (const json& c : suite["cases"]) {
        std::string text = c["text"];
        auto ids = c["ids"].get<std::vector<TokenId>>();
        EXPECT_EQ(json((*t)->Encode(text, false)).dump(), c["ids"].dump()) << name << " ids for " << Quote(text);
        EXPECT_EQ(json((*t)->Encode(text, true)).dump(), c["ids_with_special"].dump())
            << name << " ids_with_special for " << Quote(text);
        EXPECT_EQ(Quote((*t)->Decode(ids, false)), Quote(c["decoded"])) << name << " decoded for " << Quote(text);
        EXPECT_EQ(Quote((*t)->Decode(ids, true)), Quote(c["decoded_skip_special"]))
            << name << " decoded_skip_special for " << Quote(text);
        ++ran;
      }
      for (const json& p : suite["pairs"]) {
        std::string a = p["a"], b = p["b"];
        EXPECT_EQ(json((*t)->EncodePair(a, b, true)).dump(), p["ids_with_special"].dump())
            << name << " pair " << Quote(a) << ", " << Quote(b);
        EXPECT_EQ(json((*t)->EncodePair(a, b, false)).dump(), p["ids"].dump())
            << name << " pair (no special) " << Quote(a) << ", " << Quote(b);
        ++ran;
      }
    }
  }
  return ran;
}

TEST(ComponentsVsHf, Normalizers) { EXPECT_GT(RunSuites("normalizer"), 300); }
TEST(ComponentsVsHf, PreTokenizers) { EXPECT_GT(RunSuites("pre_tokenizer"), 600); }
TEST(ComponentsVsHf, Decoders) { EXPECT_GT(RunSuites("decoder"), 20); }
TEST(ComponentsVsHf, TokenizersAndAddedTokens) { EXPECT_GT(RunSuites("tokenizer"), 80); }

}  // namespace
}  // namespace llmhost::components_test
