#include "model/scripted_model.h"

#include <cstring>

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/json.h"

namespace llmhost {

namespace {

constexpr int kDigits = 4;       // base-64 digits of an id: ids < 2^24
constexpr int32_t kBase = 64;
constexpr float kOffLogit = -100;  // e^-100: no sampling setting picks another token
constexpr size_t kMinResync = 4;

// Small integers (< 2^8) are exact in every 16- and 32-bit cache type; each
// is written as the bits of its type. An FP8 slot (exact only to 16) holds
// the digit's own byte: the cache is this model's storage, never attended.
void PutSmall(DType t, uint8_t* at, int32_t v) {
  const float f = static_cast<float>(v);
  if (t == DType::kF8_E4M3) {
    *at = static_cast<uint8_t>(v);
    return;
  }
  if (t == DType::kF32) {
    std::memcpy(at, &f, 4);
    return;
  }
  uint16_t h = 0;
  if (t == DType::kBF16) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    h = static_cast<uint16_t>(bits >> 16);
  } else if (v > 0) {  // f16: 1.m × 2^e, 10 mantissa bits
    int e = 0;
    while ((v >> (e + 1)) > 0) ++e;
    h = static_cast<uint16_t>(((e + 15) << 10) | (((v << 10) >> e) & 0x3ff));
  }
  std::memcpy(at, &h, 2);
}

int32_t GetSmall(DType t, const uint8_t* at) {
  if (t == DType::kF8_E4M3) return *at;
  if (t == DType::kF32) {
    float f;
    std::memcpy(&f, at, 4);
    return static_cast<int32_t>(f);
  }
  uint16_t h;
  std::memcpy(&h, at, 2);
  if (t == DType::kBF16) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<int32_t>(f);
  }
  if (h == 0) return 0;
  const int e = ((h >> 10) & 0x1f) - 15;
  return ((0x400 | (h & 0x3ff)) << e) >> 10;
}

}  // namespace

Result<std::vector<ScriptReply>> ParseScript(const std::string& text) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text, kScriptFileName, kJsonModelFileMaxBytes));
  auto replies = j.is_object() ? j.find("replies") : j.end();
  if (replies == j.end() || !replies->is_array()) {
    return Status::InvalidArgument(std::string(kScriptFileName) +
                                   ": expected {\"replies\": [{\"when\", \"text\"}, ...]}");
  }
  std::vector<ScriptReply> out;
  for (size_t i = 0; i < replies->size(); ++i) {
    const nlohmann::json& r = (*replies)[i];
    const std::string at = std::string(kScriptFileName) + ": replies[" + std::to_string(i) + "]";
    if (!r.is_object()) return Status::InvalidArgument(at + ": expected an object {\"when\", \"text\"}");
    ScriptReply s;
    auto text_it = r.find("text");
    if (text_it == r.end() || !text_it->is_string()) return Status::InvalidArgument(at + ".text: expected a string");
    s.text = text_it->get<std::string>();
    if (auto w = r.find("when"); w != r.end() && !w->is_null()) {
      if (!w->is_string() || w->get_ref<const std::string&>().empty()) {
        return Status::InvalidArgument(at + ".when: expected a non-empty string (leave it out for the default)");
      }
      s.when = w->get<std::string>();
    }
    out.push_back(std::move(s));
  }
  return out;
}

const ScriptReply* ChooseReply(const std::vector<ScriptReply>& replies, const std::string& prompt) {
  const ScriptReply* best = nullptr;
  const ScriptReply* fallback = nullptr;
  size_t best_at = 0;
  for (const ScriptReply& r : replies) {
    if (r.when.empty()) {
      if (!fallback) fallback = &r;
      continue;
    }
    const size_t at = prompt.rfind(r.when);
    if (at != std::string::npos && (!best || at > best_at)) {
      best = &r;
      best_at = at;
    }
  }
  return best ? best : fallback;
}

size_t ScriptPosition(const std::string& text, const std::string& generated) {
  if (text.compare(0, generated.size(), generated) == 0 && generated.size() <= text.size()) return generated.size();
  for (size_t n = std::min(generated.size(), text.size()); n >= kMinResync; --n) {
    const size_t at = text.find(std::string_view(generated).substr(generated.size() - n));
    if (at != std::string::npos) return at + n;
  }
  return std::string::npos;
}

Result<std::unique_ptr<ScriptedOutput>> ScriptedOutput::Load(const std::string& dir, int64_t vocab, int32_t eos) {
  std::unique_ptr<ScriptedOutput> m(new ScriptedOutput());
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(dir + "/" + kScriptFileName, kJsonModelFileMaxBytes));
  auto replies = ParseScript(text);
  if (!replies.ok()) return replies.status().WithContext(dir);
  m->replies_ = std::move(*replies);
  ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::FromPath(dir));
  m->vocab_ = vocab;
  m->eos_ = eos;
  return m;
}

ScriptedOutput::~ScriptedOutput() = default;

Result<std::vector<int32_t>> ScriptedOutput::History(const KvCache& cache, const KvSequence& seq) const {
  std::vector<int32_t> ids(static_cast<size_t>(seq.length));
  std::vector<uint8_t> block(cache.block_bytes());
  const size_t el = DTypeSize(cache.dtype());
  const int64_t bs = cache.block_size();
  for (int64_t b = 0; b * bs < seq.length; ++b) {
    RETURN_IF_ERROR(cache.ReadBlock(seq.block_table[static_cast<size_t>(b)], block.data()));
    for (int64_t j = 0; j < bs && b * bs + j < seq.length; ++j) {
      const uint8_t* row = block.data() + static_cast<size_t>(j * cache.kv_dim()) * el;  // layer 0's K
      int32_t id = 0;
      for (int d = kDigits - 1; d >= 0; --d) id = id * kBase + GetSmall(cache.dtype(), row + d * el);
      ids[static_cast<size_t>(b * bs + j)] = id;
    }
  }
  return ids;
}

Status ScriptedOutput::Store(KvCache& cache, const KvSequence& seq, int64_t from, std::span<const int32_t> ids) const {
  std::vector<uint8_t> block(cache.block_bytes());
  const size_t el = DTypeSize(cache.dtype());
  const int64_t bs = cache.block_size();
  const int64_t end = from + static_cast<int64_t>(ids.size());
  for (int64_t pos = from; pos < end;) {
    const int64_t b = pos / bs;
    const int32_t id = seq.block_table[static_cast<size_t>(b)];
    RETURN_IF_ERROR(cache.ReadBlock(id, block.data()));
    for (; pos < end && pos / bs == b; ++pos) {
      uint8_t* row = block.data() + static_cast<size_t>((pos % bs) * cache.kv_dim()) * el;
      int32_t v = ids[static_cast<size_t>(pos - from)];
      for (int d = 0; d < kDigits; ++d, v /= kBase) PutSmall(cache.dtype(), row + d * el, v % kBase);
    }
    cache.WriteBlock(id, block.data());
  }
  return Status::OK();
}

int32_t ScriptedOutput::Next(const std::vector<int32_t>& ids, int64_t prompt_length) const {
  const int64_t p = std::min<int64_t>(prompt_length, static_cast<int64_t>(ids.size()));
  const std::span<const int32_t> all(ids);
  const std::string prompt = tokenizer_->Decode(all.subspan(0, static_cast<size_t>(p)), /*skip_special=*/false);
  const ScriptReply* reply = ChooseReply(replies_, prompt);
  if (!reply) return eos_;
  const std::string generated = tokenizer_->Decode(all.subspan(static_cast<size_t>(p)), /*skip_special=*/false);
  const size_t at = ScriptPosition(reply->text, generated);
  if (at == std::string::npos || at >= reply->text.size()) return eos_;
  // The first token of the rest: the output's text grows by exactly the script's.
  const std::vector<int32_t> rest = tokenizer_->Encode(std::string_view(reply->text).substr(at), /*add_special=*/false);
  return rest.empty() ? eos_ : rest.front();
}

Status ScriptedOutput::Forward(std::span<const ForwardItem> items, KvCache& cache, ForwardOutput* out) {
  if (cache.kv_dim() < kDigits) return Status::InvalidArgument("scripted model: the KV rows are too narrow");
  int64_t need = 0;
  for (const ForwardItem& it : items) {
    for (int32_t t : it.tokens) {
      if (t < 0 || t >= vocab_) {
        return Status::InvalidArgument("forward: token id " + std::to_string(t) + " outside the vocabulary");
      }
    }
    need += cache.BlocksNeeded(*it.seq, it.seq->length + static_cast<int64_t>(it.tokens.size()));
  }
  if (need > cache.allocator().free_blocks()) return Status::ResourceExhausted("KV cache: no free blocks");
  *out = ForwardOutput{};
  out->vocab = vocab_;
  for (const ForwardItem& it : items) {
    const int64_t from = it.seq->length;
    const int64_t n = static_cast<int64_t>(it.tokens.size());
    RETURN_IF_ERROR(cache.Reserve(it.seq, from + n));
    RETURN_IF_ERROR(Store(cache, *it.seq, from, it.tokens));
    it.seq->length = from + n;
    const int64_t rows = it.logits == LogitsRows::kNone ? 0 : it.logits == LogitsRows::kLast ? 1 : n;
    out->first_row.push_back(rows ? static_cast<int64_t>(out->logits.size() / static_cast<size_t>(vocab_)) : -1);
    out->n_rows.push_back(rows);
    if (rows == 0) continue;
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, History(cache, *it.seq));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t upto = from + n - rows + r + 1;  // the row after position upto - 1
      std::vector<int32_t> prefix(ids.begin(), ids.begin() + upto);
      const int32_t next = Next(prefix, std::min(it.generated_from, upto));
      const size_t base = out->logits.size();
      out->logits.resize(base + static_cast<size_t>(vocab_), kOffLogit);
      out->logits[base + static_cast<size_t>(next)] = 0;
    }
  }
  return Status::OK();
}

}  // namespace llmhost
