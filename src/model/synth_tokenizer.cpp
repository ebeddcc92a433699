// The synthetic model's tokenizer: byte-level BPE (GPT-2 alphabet, GPT-2
// pre-tokenizer regex) with exactly `vocab` ids. Ids 0..255 are the bytes
// 0..255; the merges spell words over lowercase letters, shortest first
// ("Ġt" + "h", then "Ġth" + "e", ...), so that English text merges into
// multi-letter tokens; the last three ids are the ChatML special tokens.
#include <string>
#include <unordered_set>

#include "model/synth_internal.h"
#include "tokenizer/byte_level.h"

namespace llmhost::synth {

namespace {

// Letters in English frequency order (the earliest merges pair the most
// common ones).
constexpr char kLetters[] = "etaoinshrdlcumwfgypbvkjxqz";

// Merges (left, right) in rank order: breadth-first over strings of letters,
// optionally led by a space ("Ġ"), each string = its prefix + one letter.
std::vector<std::pair<std::string, std::string>> MakeMerges(int64_t count) {
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(static_cast<size_t>(count));
  std::vector<std::string> frontier;
  frontier.push_back(tok::ByteLevelEncode(" "));
  for (const char* c = kLetters; *c; ++c) frontier.push_back(std::string(1, *c));
  std::unordered_set<std::string> seen(frontier.begin(), frontier.end());
  for (size_t head = 0; static_cast<int64_t>(merges.size()) < count; ++head) {
    const std::string prefix = frontier[head];  // copy: frontier grows below
    for (const char* c = kLetters; *c && static_cast<int64_t>(merges.size()) < count; ++c) {
      std::string joined = prefix + *c;
      if (!seen.insert(joined).second) continue;
      merges.emplace_back(prefix, std::string(1, *c));
      frontier.push_back(std::move(joined));
    }
  }
  return merges;
}

nlohmann::ordered_json AddedToken(int64_t id, const std::string& content) {
  return {{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},   {"normalized", false}, {"special", true}};
}

}  // namespace

SpecialIds SpecialsFor(int64_t vocab) { return {vocab - 3, vocab - 2, vocab - 1}; }

std::string TokenizerJson(int64_t vocab) {
  const SpecialIds sp = SpecialsFor(vocab);
  nlohmann::ordered_json doc;
  doc["version"] = "1.0";
  doc["truncation"] = nullptr;
  doc["padding"] = nullptr;
  doc["added_tokens"] = {AddedToken(sp.endoftext, "<|endoftext|>"),
                         AddedToken(sp.im_start, "<|im_start|>"),
                         AddedToken(sp.im_end, "<|im_end|>")};
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false},
                          {"trim_offsets", true}, {"use_regex", true}};
  doc["post_processor"] = nullptr;
  doc["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true},
                    {"trim_offsets", true}, {"use_regex", true}};
  doc["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", false},
                  {"byte_fallback", false},
                  {"ignore_merges", false}};
  // The vocabulary and merges are written by hand, in id order: an
  // ordered_json object inserts in linear time per key (quadratic for 128k).
  std::string text = doc.dump(1);
  for (int closes = 0; closes < 2; ++closes) {  // reopen "model": drop its "}" and the document's
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (!text.empty() && text.back() == '}') text.pop_back();
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  text += ",\n  \"vocab\": {";
  for (int b = 0; b < 256; ++b) {
    text += (b ? ", " : "") + quoted(tok::ByteLevelEncode(std::string(1, static_cast<char>(b)))) +
            ": " + std::to_string(b);
  }
  const auto merges = MakeMerges(vocab - kMinVocab);
  int64_t id = 256;
  for (const auto& [a, b] : merges) text += ",\n   " + quoted(a + b) + ": " + std::to_string(id++);
  text += "},\n  \"merges\": [";
  for (size_t i = 0; i < merges.size(); ++i) {
    text += (i ? ",\n   [" : "[") + quoted(merges[i].first) + ", " + quoted(merges[i].second) + "]";
  }
  text += "]\n }\n}\n";
  return text;
}

const std::string& ChatMlTemplate() {
  static const std::string kTemplate =
      "{%- for message in messages -%}\n"
      "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
      "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}\n"
      "{{- '<|im_end|>\\n' -}}\n"
      "{%- endfor -%}\n"
      "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";
  return kTemplate;
}

nlohmann::ordered_json GenerationConfigJson(int64_t vocab) {
  const SpecialIds sp = SpecialsFor(vocab);
  return {{"bos_token_id", sp.endoftext},
          {"eos_token_id", nlohmann::ordered_json::array({sp.im_end, sp.endoftext})},
          {"pad_token_id", sp.endoftext}};
}

nlohmann::ordered_json TokenizerConfig(int64_t vocab, int64_t model_max_length) {
  const SpecialIds sp = SpecialsFor(vocab);
  nlohmann::ordered_json decoder = nlohmann::ordered_json::object();
  for (const auto& [id, text] : {std::pair{sp.endoftext, "<|endoftext|>"},
                                 {sp.im_start, "<|im_start|>"}, {sp.im_end, "<|im_end|>"}}) {
    nlohmann::ordered_json e = AddedToken(id, text);
    e.erase("id");
    decoder[std::to_string(id)] = std::move(e);
  }
  return {{"add_bos_token", false},
          {"add_eos_token", false},
          {"added_tokens_decoder", std::move(decoder)},
          {"bos_token", nullptr},
          {"eos_token", "<|im_end|>"},
          {"pad_token", "<|endoftext|>"},
          {"unk_token", nullptr},
          {"clean_up_tokenization_spaces", false},
          {"model_max_length", model_max_length},
          {"tokenizer_class", "PreTrainedTokenizerFast"},
          {"chat_template", ChatMlTemplate()}};
}

}  // namespace llmhost::synth
