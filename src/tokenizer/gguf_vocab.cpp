// GGUF vocabulary -> tokenizer.json document -> Tokenizer. See gguf_vocab.h.
//
// Facts used (not code): the tokenizer.ggml.* keys and token types of the
// GGUF spec; llama.cpp's defaults per model type and its pre-tokenizer regexes
// per tokenizer.ggml.pre (llama-vocab.cpp); the order in which Hugging Face's
// LlamaConverter derives BPE merges from SentencePiece scores.
#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string_view>
#include <unordered_map>

#include "formats/gguf.h"
#include "util/log.h"
#include "util/utf8.h"

namespace llmhost {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxTokens = size_t{1} << 24;  // as tokenizer.json ids
constexpr size_t kMaxMerges = size_t{1} << 24;
constexpr size_t kMaxSplitPieceBytes = 256;  // SentencePiece pieces that merges are derived for
const char kSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// ---------------------------------------------------------------------------
// Pre-tokenizers for byte-level BPE ("gpt2"), keyed by tokenizer.ggml.pre.
// Regexes are in Hugging Face (Oniguruma) syntax: the originals of the
// tokenizer.json files that llama.cpp's lists were adapted from. Several
// regexes apply in turn, each splitting the pieces left by the previous one
// and keeping unmatched text as pieces (llama.cpp's unicode_regex_split,
// which is HF's Split with behavior "Isolated").

const char kLlama3Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char kQwen2Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char kGpt2Regex[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char kGpt4oRegex[] =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char kTekkenRegex[] =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreTokenizerSpec {
  std::initializer_list<const char*> names;
  std::initializer_list<const char*> regexes;
  bool nfc = false;            // HF normalizer NFC (Qwen2 family)
  bool ignore_merges = false;  // a piece that is a token is kept whole
  bool add_bos = false;        // llama.cpp's default for add_bos_token
};

const PreTokenizerSpec kPreTokenizers[] = {
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
     {kLlama3Regex}, false, true, true},
    {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3Regex}},
    {{"qwen2", "deepseek-r1-qwen", "megrez"}, {kQwen2Regex}, /*nfc=*/true},
    {{"stablelm2"}, {kQwen2Regex}},
    {{"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es",
      "jina-v2-de", "jina-v2-code", "roberta-bpe", "gigachat", "exaone4", "trillion"},
     {kGpt2Regex}},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
     {R"(\p{N})", kGpt2Regex}},
    {{"falcon"},
     {R"([\p{P}\$\+<=>\^~\|`]+)", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
      "[0-9][0-9][0-9]"}},
    {{"deepseek-coder"},
     {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\xE4\xB8\x80-\xE9\xBE\xA5\xE0\xA0\x80-\xE4\xB8\x80\xEA\xB0\x80-\xED\x9F\xBF]+",
      R"(\p{N})"}},
    {{"deepseek-v3"},
     {R"(\p{N}{1,3})", "[\xE4\xB8\x80-\xE9\xBE\xA5\xE3\x81\x80-\xE3\x82\x9F\xE3\x82\xA0-\xE3\x83\xBF]+",
      R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
    {{"gpt-4o", "llama4"}, {kGpt4oRegex}},
    {{"tekken"}, {kTekkenRegex}, false, true, true},
    // llama.cpp's fallback for "default", a missing or an unknown name.
    {{"default"},
     {R"([\p{P}\$\+<=>\^~\|]+)", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
      R"(\p{N}+)", "[0-9][0-9][0-9]"}},
};

const PreTokenizerSpec& FindPreTokenizer(const std::string& pre) {
  for (const PreTokenizerSpec& spec : kPreTokenizers)
    for (const char* name : spec.names)
      if (pre == name) return spec;
  LOG_WARN("GGUF tokenizer.ggml.pre '" << pre << "' is not known: using llama.cpp's 'default' regexes");
  return kPreTokenizers[std::size(kPreTokenizers) - 1];
}

// ---------------------------------------------------------------------------
// Helpers shared by both vocabulary types.

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Added tokens the converter would have made CONTROL (HF "special") though
// the file calls them user-defined: convert_hf_to_gguf's
// does_token_look_special, plus llama.cpp's end-of-generation texts.
bool LooksSpecial(std::string_view t) {
  static const char* kNames[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]", "<end_of_turn>",
                                 "<EOT>", "_<EOT>", "<end_of_utterance>"};
  for (const char* n : kNames)
    if (t == n) return true;
  if (StartsWith(t, "<|") && EndsWith(t, "|>") && t.size() >= 4) return true;
  if (StartsWith(t, "<\xEF\xBD\x9C") && EndsWith(t, "\xEF\xBD\x9C>") && t.size() >= 8) return true;
  return StartsWith(t, "<unused") && EndsWith(t, ">");
}

Json AddedToken(int64_t id, const std::string& content, bool special) {
  return Json{{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
              {"rstrip", false},   {"normalized", false}, {"special", special}};
}

Json TemplatePiece(const char* kind, const std::string& id, int type_id) {
  return Json{{kind, Json{{"id", id}, {"type_id", type_id}}}};
}

// TemplateProcessing as transformers' LlamaTokenizerFast builds it:
// single = [BOS] $A [EOS], pair = [BOS] $A [EOS] [BOS] $B [EOS] (type 1).
Json PostProcessor(const GgufVocab& v, std::optional<int64_t> bos, std::optional<int64_t> eos) {
  Json single = Json::array(), pair = Json::array(), specials = Json::object();
  auto add_special = [&](int64_t id, Json* seq, int type_id) {
    const std::string& text = v.tokens[id];
    seq->push_back(TemplatePiece("SpecialToken", text, type_id));
    specials[text] = Json{{"id", text}, {"ids", Json::array({id})}, {"tokens", Json::array({text})}};
  };
  auto sequence = [&](Json* seq, const char* name, int type_id) {
    if (bos) add_special(*bos, seq, type_id);
    seq->push_back(TemplatePiece("Sequence", name, type_id));
    if (eos) add_special(*eos, seq, type_id);
  };
  sequence(&single, "A", 0);
  pair = single;
  sequence(&pair, "B", 1);
  return Json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

// The id `given` when it names a token, else `fallback` when that does.
std::optional<int64_t> SpecialId(std::optional<int64_t> given, int64_t fallback, size_t n,
                                 const char* key) {
  if (given && *given >= 0 && static_cast<uint64_t>(*given) < n) return given;
  if (given) LOG_WARN("GGUF " << key << " = " << *given << " is not a token id: using " << fallback);
  if (fallback >= 0 && static_cast<uint64_t>(fallback) < n) return fallback;
  return std::nullopt;
}

int32_t TypeOf(const GgufVocab& v, size_t id) {
  return v.token_types.empty() ? kGgufTokenNormal : v.token_types[id];
}

// Builds the vocab object and the added tokens shared by both layouts:
// every token is in the model vocabulary; control, unknown and user-defined
// tokens and the file's BOS/EOS/UNK are also added tokens (matched in text
// before the model runs).
Status VocabAndAddedTokens(const GgufVocab& v, Json* vocab, Json* added) {
  // BOS/EOS/UNK named by the file are special whatever their type (HF lists
  // them as special added tokens); llama.cpp's defaults are not trusted that
  // far (gpt2's default BOS is token 11, a comma in GPT-2's vocabulary).
  std::vector<int64_t> special_ids;
  for (const auto& id : {v.bos_id, v.eos_id, v.unk_id})
    if (id && *id >= 0 && static_cast<uint64_t>(*id) < v.tokens.size()) special_ids.push_back(*id);
  *vocab = Json::object();
  *added = Json::array();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const std::string& t = v.tokens[id];
    auto [it, inserted] = vocab->emplace(t, static_cast<int64_t>(id));
    if (!inserted)
      return Status::InvalidArgument("tokenizer.ggml.tokens: token '" + t + "' appears at ids " +
                                     std::to_string(it->get<int64_t>()) + " and " + std::to_string(id));
    int32_t type = TypeOf(v, id);
    bool is_special_id = std::find(special_ids.begin(), special_ids.end(), static_cast<int64_t>(id)) !=
                         special_ids.end();
    if (type == kGgufTokenControl || type == kGgufTokenUnknown || is_special_id) {
      added->push_back(AddedToken(static_cast<int64_t>(id), t, true));
    } else if (type == kGgufTokenUserDefined) {
      added->push_back(AddedToken(static_cast<int64_t>(id), t, LooksSpecial(t)));
    }
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// SentencePiece BPE ("llama").

// Merges as HF's SentencePieceExtractor derives them: every split of every
// piece into two pieces of the vocabulary, ordered by the merged piece's
// score (highest first), then by piece id, then by the ids of the halves.
std::vector<std::pair<std::string, std::string>> DeriveSpmMerges(
    const std::vector<std::string>& tokens, const std::vector<float>& scores) {
  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) ids.emplace(tokens[i], static_cast<int32_t>(i));
  struct Merge {
    float score;
    int32_t piece, left, right;
    uint32_t split;  // byte offset of the split in the piece
  };
  std::vector<Merge> merges;
  size_t skipped = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    std::string_view t = tokens[p];
    // Splitting costs O(length^2); SentencePiece pieces are at most 16
    // characters by default, so a longer one only comes from a hostile file.
    if (t.size() > kMaxSplitPieceBytes) {
      ++skipped;
      continue;
    }
    float score = scores.empty() ? 0.0f : scores[p];
    if (std::isnan(score)) score = -INFINITY;
    size_t pos = 0;
    utf8::DecodeOne(t, &pos);  // the left half holds at least one character
    for (; pos < t.size(); utf8::DecodeOne(t, &pos)) {
      auto l = ids.find(t.substr(0, pos)), r = ids.find(t.substr(pos));
      if (l != ids.end() && r != ids.end())
        merges.push_back(Merge{score, static_cast<int32_t>(p), l->second, r->second, static_cast<uint32_t>(pos)});
    }
  }
  if (skipped > 0) LOG_WARN("GGUF tokenizer.ggml.tokens: " << skipped << " pieces longer than " << kMaxSplitPieceBytes << " bytes get no merges");
  std::sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.piece != b.piece) return a.piece < b.piece;
    if (a.left != b.left) return a.left < b.left;
    return a.right < b.right;
  });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) {
    std::string_view t = tokens[m.piece];
    out.emplace_back(std::string(t.substr(0, m.split)), std::string(t.substr(m.split)));
  }
  return out;
}

Result<Json> SpmTokenizerJson(const GgufVocab& v) {
  const size_t n = v.tokens.size();
  std::optional<int64_t> unk = SpecialId(v.unk_id, 0, n, "tokenizer.ggml.unknown_token_id");
  std::optional<int64_t> bos = SpecialId(v.bos_id, 1, n, "tokenizer.ggml.bos_token_id");
  std::optional<int64_t> eos = SpecialId(v.eos_id, 2, n, "tokenizer.ggml.eos_token_id");
  Json vocab, added;
  RETURN_IF_ERROR(VocabAndAddedTokens(v, &vocab, &added));

  Json merges = Json::array();
  for (auto& [a, b] : DeriveSpmMerges(v.tokens, v.scores)) merges.push_back(Json::array({a, b}));
  Json model = {{"type", "BPE"},           {"dropout", nullptr}, {"fuse_unk", true},
                {"byte_fallback", true},   {"ignore_merges", false},
                {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
  model["unk_token"] = unk ? Json(v.tokens[*unk]) : Json(nullptr);

  bool prefix = v.add_space_prefix.value_or(true);
  Json replace_space = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}};
  Json normalizers = Json::array();
  if (prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", kSpace}});
  normalizers.push_back(replace_space);

  Json decoders = Json::array({Json{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                               Json{{"type", "ByteFallback"}}, Json{{"type", "Fuse"}}});
  if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});

  bool add_bos = v.add_bos.value_or(true), add_eos = v.add_eos.value_or(false);
  Json doc = {{"version", "1.0"},
              {"added_tokens", std::move(added)},
              {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
              {"pre_tokenizer", nullptr},
              {"post_processor", PostProcessor(v, add_bos ? bos : std::nullopt, add_eos ? eos : std::nullopt)},
              {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
              {"model", std::move(model)}};
  return doc;
}

// ---------------------------------------------------------------------------
// Byte-level BPE ("gpt2").

Result<Json> Gpt2TokenizerJson(const GgufVocab& v) {
  const size_t n = v.tokens.size();
  const PreTokenizerSpec& spec = FindPreTokenizer(v.pre.empty() ? "default" : v.pre);
  // llama.cpp's defaults for BPE vocabularies: BOS = EOS = 11.
  std::optional<int64_t> bos = SpecialId(v.bos_id, 11, n, "tokenizer.ggml.bos_token_id");
  std::optional<int64_t> eos = SpecialId(v.eos_id, 11, n, "tokenizer.ggml.eos_token_id");
  std::optional<int64_t> unk = v.unk_id ? SpecialId(v.unk_id, -1, n, "tokenizer.ggml.unknown_token_id")
                                        : std::nullopt;
  Json vocab, added;
  RETURN_IF_ERROR(VocabAndAddedTokens(v, &vocab, &added));

  // "a b" split at the first space after the first byte (as llama.cpp), so a
  // token that is itself a space still parses. Merges whose parts or result
  // are not tokens can never apply: they are dropped (keeping rank order).
  std::unordered_map<std::string_view, int32_t> ids;  // faster than the Json object
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) ids.emplace(v.tokens[i], static_cast<int32_t>(i));
  Json merges = Json::array();
  merges.get_ref<Json::array_t&>().reserve(v.merges.size());
  size_t dropped = 0;
  std::string merged;
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos)
      return Status::InvalidArgument("tokenizer.ggml.merges[" + std::to_string(i) + "]: expected \"a b\", got \"" +
                                     m + "\"");
    std::string_view a = std::string_view(m).substr(0, sp), b = std::string_view(m).substr(sp + 1);
    merged.assign(a).append(b);
    if (!ids.count(a) || !ids.count(b) || !ids.count(merged)) {
      ++dropped;
      continue;
    }
    // "a b" is unambiguous unless a token holds a space (byte-level ones never do).
    if (m[0] != ' ' && b.find(' ') == std::string_view::npos) merges.push_back(m);
    else merges.push_back(Json::array({std::string(a), std::string(b)}));
  }
  if (dropped > 0) LOG_WARN("GGUF tokenizer.ggml.merges: " << dropped << " merges name tokens not in the vocabulary");

  Json model = {{"type", "BPE"},       {"dropout", nullptr},     {"unk_token", unk ? Json(v.tokens[*unk]) : Json(nullptr)},
                {"fuse_unk", false},   {"byte_fallback", false}, {"ignore_merges", spec.ignore_merges},
                {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};

  Json pretoks = Json::array();
  for (const char* re : spec.regexes)
    pretoks.push_back(
        {{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
  pretoks.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});

  bool add_bos = v.add_bos.value_or(spec.add_bos), add_eos = v.add_eos.value_or(false);
  Json doc = {{"version", "1.0"},
              {"added_tokens", std::move(added)},
              {"normalizer", spec.nfc ? Json{{"type", "NFC"}} : Json(nullptr)},
              {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", pretoks}}},
              {"post_processor", PostProcessor(v, add_bos ? bos : std::nullopt, add_eos ? eos : std::nullopt)},
              {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
              {"model", std::move(model)}};
  return doc;
}

// ---------------------------------------------------------------------------
// Reading the metadata.

template <typename T>
Status ReadOptional(Result<T> r, std::optional<T>* out) {
  if (r.ok()) *out = std::move(r).value();
  else if (r.status().code() != StatusCode::kNotFound) return r.status();
  return Status::OK();
}

}  // namespace

Result<GgufVocab> ReadGgufVocab(const GgufFile& f) {
  GgufVocab v;
  if (!f.Has("tokenizer.ggml.model"))
    return Status::NotFound("no tokenizer.ggml.model key: this GGUF file holds no vocabulary");
  ASSIGN_OR_RETURN(v.model, f.GetString("tokenizer.ggml.model"));
  if (f.Has("tokenizer.ggml.pre")) {
    ASSIGN_OR_RETURN(v.pre, f.GetString("tokenizer.ggml.pre"));
  }
  ASSIGN_OR_RETURN(v.tokens, f.GetStringArray("tokenizer.ggml.tokens"));
  const size_t n = v.tokens.size();
  if (n == 0) return Status::InvalidArgument("tokenizer.ggml.tokens: empty vocabulary");
  if (n > kMaxTokens)
    return Status::InvalidArgument("tokenizer.ggml.tokens: " + std::to_string(n) + " tokens exceed the limit of " +
                                   std::to_string(kMaxTokens));
  for (size_t i = 0; i < n; ++i)
    if (v.tokens[i].empty()) v.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
  if (f.Has("tokenizer.ggml.scores")) {
    ASSIGN_OR_RETURN(std::vector<double> scores, f.GetFloatArray("tokenizer.ggml.scores"));
    if (scores.size() != n)
      return Status::InvalidArgument("tokenizer.ggml.scores: " + std::to_string(scores.size()) +
                                     " values for " + std::to_string(n) + " tokens");
    v.scores.assign(scores.begin(), scores.end());
  }
  if (f.Has("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> types, f.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != n)
      return Status::InvalidArgument("tokenizer.ggml.token_type: " + std::to_string(types.size()) +
                                     " values for " + std::to_string(n) + " tokens");
    v.token_types.reserve(n);
    for (int64_t t : types) v.token_types.push_back(t >= 1 && t <= 6 ? static_cast<int32_t>(t) : 0);
  }
  if (f.Has("tokenizer.ggml.merges")) {
    ASSIGN_OR_RETURN(v.merges, f.GetStringArray("tokenizer.ggml.merges"));
    if (v.merges.size() > kMaxMerges)
      return Status::InvalidArgument("tokenizer.ggml.merges: too many merges (" + std::to_string(v.merges.size()) + ")");
  }
  RETURN_IF_ERROR(ReadOptional(f.GetInt("tokenizer.ggml.bos_token_id"), &v.bos_id));
  RETURN_IF_ERROR(ReadOptional(f.GetInt("tokenizer.ggml.eos_token_id"), &v.eos_id));
  RETURN_IF_ERROR(ReadOptional(f.GetInt("tokenizer.ggml.unknown_token_id"), &v.unk_id));
  RETURN_IF_ERROR(ReadOptional(f.GetBool("tokenizer.ggml.add_bos_token"), &v.add_bos));
  RETURN_IF_ERROR(ReadOptional(f.GetBool("tokenizer.ggml.add_eos_token"), &v.add_eos));
  RETURN_IF_ERROR(ReadOptional(f.GetBool("tokenizer.ggml.add_space_prefix"), &v.add_space_prefix));
  return v;
}

Result<nlohmann::json> GgufVocabToTokenizerJson(const GgufVocab& v) {
  if (v.tokens.empty()) return Status::InvalidArgument("tokenizer.ggml.tokens: empty vocabulary");
  if (!v.scores.empty() && v.scores.size() != v.tokens.size())
    return Status::InvalidArgument("tokenizer.ggml.scores: not one per token");
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size())
    return Status::InvalidArgument("tokenizer.ggml.token_type: not one per token");
  if (v.model == "llama") return SpmTokenizerJson(v);
  if (v.model == "gpt2") {
    if (v.merges.empty()) return Status::InvalidArgument("tokenizer.ggml.merges: missing (required for gpt2 vocabularies)");
    return Gpt2TokenizerJson(v);
  }
  return Status::NotSupported("tokenizer.ggml.model '" + v.model +
                              "' is not supported (supported: 'llama' SentencePiece, 'gpt2' byte-level BPE)");
}

Result<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const std::string& path) {
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status();
  auto vocab = ReadGgufVocab(**file);
  if (!vocab.ok()) return vocab.status().WithContext(path);
  auto doc = GgufVocabToTokenizerJson(*vocab);
  if (!doc.ok()) return doc.status().WithContext(path);
  auto tok = Tokenizer::FromJson(*doc);
  if (!tok.ok()) return tok.status().WithContext(path + " (vocabulary converted to tokenizer.json)");
  return tok;
}

}  // namespace llmhost
