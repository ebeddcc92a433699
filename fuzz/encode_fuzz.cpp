// Fuzzes Encode/Decode on arbitrary bytes (including invalid UTF-8) with four
// small built-in tokenizers: byte-level BPE (Llama-3 style split, added
// tokens), SentencePiece-style BPE with byte fallback, BERT WordPiece and
// XLM-R-style Unigram. The first input byte picks the tokenizer. For the
// byte-level BPE, decode(encode(text)) must give the (repaired) text back.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using nlohmann::json;

json Added(int id, const char* content, bool special, bool lstrip = false, bool rstrip = false,
           bool single_word = false, bool normalized = false) {
  return {{"id", id},         {"content", content}, {"single_word", single_word}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

// Byte-level BPE: 256 alphabet tokens, merges over "hello world", added tokens.
json ByteLevelBpe() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[llmhost::tok::ByteLevelEncode(std::string(1, char(b)))] = b;
  const char* merges[] = {"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "Ġwor l", "Ġworl d",
                          "Ġ Ġ", "ĠĠ ĠĠ", "Ċ Ċ", "1 2", "12 3"};
  json m = json::array();
  int next = 256;
  for (const char* mg : merges) {
    std::string s = mg;
    size_t sp = s.find(' ');
    std::string merged = s.substr(0, sp) + s.substr(sp + 1);
    if (!vocab.contains(merged)) vocab[merged] = next++;
    m.push_back(s);
  }
  json added = json::array({Added(next, "<|special|>", true), Added(next + 1, "<|eot|>", true),
                            Added(next + 2, "<tool>", false)});
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "<|special|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{"<|special|>", {{"id", "<|special|>"}, {"ids", {next}}, {"tokens", {"<|special|>"}}}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}, {"ignore_merges", true}}}};
}

// SentencePiece-style BPE: byte fallback, Metaspace "first", lstrip/rstrip tokens.
json SentencePieceBpe() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  int next = 3;
  char name[8];
  for (int b = 0; b < 256; ++b) {
    snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = next++;
  }
  for (const char* c : {"▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "▁w", "el", "lo", "▁hel", "▁hello"})
    if (!vocab.contains(c)) vocab[c] = next++;
  json merges = json::array({json::array({"▁", "h"}), json::array({"e", "l"}), json::array({"▁h", "el"}),
                             json::array({"l", "o"}), json::array({"▁", "w"}), json::array({"▁hel", "lo"})});
  json added = json::array({Added(0, "<unk>", true), Added(1, "<s>", true), Added(2, "</s>", true),
                            Added(next, "<pad>", true, true, true), Added(next + 1, "word", false, false, false, true, true)});
  return {{"added_tokens", added},
          {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}, {{"type", "Lowercase"}}}}}},
          {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", false}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {"<s>", "$A", "</s>"}},
            {"pair", {"<s>", "$A", "</s>", "$B:1"}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}},
                                {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"unk_token", "<unk>"},
                     {"byte_fallback", true}, {"fuse_unk", true}}}};
}

json BertWordPiece() {
  json vocab = {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}, {"un", 4}, {"##aff", 5},
                {"##able", 6}, {"a", 7}, {"##a", 8}, {",", 9}, {"hello", 10}, {"##s", 11}};
  return {{"added_tokens", {Added(0, "[PAD]", true), Added(1, "[UNK]", true), Added(2, "[CLS]", true),
                            Added(3, "[SEP]", true)}},
          {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}, {"strip_accents", nullptr}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model", {{"type", "WordPiece"}, {"vocab", vocab}, {"unk_token", "[UNK]"},
                     {"max_input_chars_per_word", 20}}}};
}

json XlmrUnigram() {
  json vocab = json::array({{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}, {"▁", -2.0},
                            {"▁hello", -5.0}, {"▁he", -4.0}, {"llo", -4.0}, {"h", -6.0}, {"e", -6.0},
                            {"l", -6.0}, {"o", -6.0}, {"a", -3.0}, {"ab", -5.0}, {"<0x41>", -9.0}});
  return {{"added_tokens", {Added(0, "<s>", true), Added(1, "<pad>", true), Added(2, "</s>", true),
                            Added(3, "<unk>", true)}},
          {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Nmt"}}, {{"type", "NFKC"}},
                           {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}}},
          {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}}},
          {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}}}},
          {"decoder", {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}}},
          {"model", {{"type", "Unigram"}, {"unk_id", 3}, {"vocab", vocab}, {"byte_fallback", true}}}};
}

std::vector<std::unique_ptr<llmhost::Tokenizer>> Load() {
  std::vector<std::unique_ptr<llmhost::Tokenizer>> out;
  for (const json& j : {ByteLevelBpe(), SentencePieceBpe(), BertWordPiece(), XlmrUnigram()}) {
    auto t = llmhost::Tokenizer::FromJson(j);
    if (!t.ok()) {
      fprintf(stderr, "encode_fuzz: built-in tokenizer failed to load: %s\n", t.status().ToString().c_str());
      __builtin_trap();
    }
    out.push_back(std::move(t).value());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto tokenizers = Load();
  if (size == 0) return 0;
  const llmhost::Tokenizer& tok = *tokenizers[data[0] % tokenizers.size()];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<llmhost::TokenId> ids = tok.Encode(text, false);
  std::string decoded = tok.Decode(ids, false);
  if (data[0] % tokenizers.size() == 0 && decoded != llmhost::tok::SanitizeUtf8(text)) {
    fprintf(stderr, "byte-level round trip failed\n");
    __builtin_trap();
  }
  tok.Decode(ids, true);
  tok.Encode(text, true);
  size_t half = text.size() / 2;
  tok.EncodePair(text.substr(0, half), text.substr(half), true);
  // The same bytes read as ids (in and out of range).
  std::vector<llmhost::TokenId> raw;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    raw.push_back(static_cast<int16_t>((uint8_t(text[i]) << 8) | uint8_t(text[i + 1])));
  tok.Decode(raw, false);
  tok.Decode(raw, true);
  return 0;
}
