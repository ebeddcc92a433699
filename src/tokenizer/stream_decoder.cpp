#include "tokenizer/stream_decoder.h"

#include <algorithm>
#include <span>

#include "util/utf8.h"

namespace llmhost {

namespace {
// U+FFFD at the end means the decoder met bytes of a character whose rest has
// not arrived yet (decoders replace incomplete UTF-8 lossily).
bool EndsIncomplete(const std::string& s) {
  static const std::string kReplacement = utf8::Encode(utf8::kReplacement);
  return (s.size() >= 3 && s.compare(s.size() - 3, 3, kReplacement) == 0) ||
         utf8::IncompleteTailLength(s) > 0;
}
}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special, std::vector<TokenId> keep_special)
    : tokenizer_(tokenizer), skip_special_(skip_special), keep_special_(std::move(keep_special)) {
  std::sort(keep_special_.begin(), keep_special_.end());
}

std::string StreamDecoder::DecodeRange(size_t begin, size_t end) const {
  std::span<const TokenId> ids(ids_.data() + begin, end - begin);
  if (!skip_special_ || keep_special_.empty()) return tokenizer_.Decode(ids, skip_special_);
  // Dropping the other special ids first and decoding the rest with
  // specials is what skip_special does, less the kept ones.
  std::vector<TokenId> kept;
  kept.reserve(ids.size());
  for (TokenId id : ids) {
    if (!tokenizer_.IsSpecial(id) || std::binary_search(keep_special_.begin(), keep_special_.end(), id)) {
      kept.push_back(id);
    }
  }
  return tokenizer_.Decode(kept, /*skip_special=*/false);
}

std::string StreamDecoder::Delta(const std::string& prefix_text, const std::string& new_text) const {
  if (new_text.compare(0, prefix_text.size(), prefix_text) == 0) return new_text.substr(prefix_text.size());
  // The new ids changed text already emitted: HF's ByteFallback decoder turns
  // a whole run of byte tokens into U+FFFDs once the run ends in a broken
  // character, including bytes of characters that were complete. Emitted text
  // cannot be taken back (and cutting new_text at prefix_text.size() could
  // split a character), so emit the new ids decoded on their own.
  return DecodeRange(read_, ids_.size());
}

std::string StreamDecoder::Add(TokenId id) {
  ids_.push_back(id);
  std::string prefix_text = DecodeRange(prefix_, read_);
  std::string new_text = DecodeRange(prefix_, ids_.size());
  if (new_text.size() <= prefix_text.size() || EndsIncomplete(new_text)) {
    return "";  // nothing final yet: wait for more ids
  }
  std::string delta = Delta(prefix_text, new_text);
  prefix_ = read_;
  read_ = ids_.size();
  text_ += delta;
  return delta;
}

std::string StreamDecoder::Finish() {
  if (read_ == ids_.size()) return "";
  std::string prefix_text = DecodeRange(prefix_, read_);
  std::string new_text = DecodeRange(prefix_, ids_.size());
  std::string delta = Delta(prefix_text, new_text);
  prefix_ = read_ = ids_.size();
  text_ += delta;
  return delta;
}

}  // namespace llmhost
