#include "grammar/text_cover.h"

#include <algorithm>

namespace llmhost::grammar {

TextCover::Known& TextCover::At(Pair pair, TextTokens::KindSet kinds) {
  if (kinds != TextTokens::kAllKinds) return partial_[Key(pair, kinds)];
  if (all_kinds_.size() <= pair) all_kinds_.resize(rows_.rows() * TextTokens::kPositions);
  return all_kinds_[pair];
}

bool TextCover::Covers(uint8_t position, int32_t row, uint8_t depth, TextTokens::KindSet kinds) {
  Pair pair = static_cast<Pair>(row) * TextTokens::kPositions + position;
  if (CoversOnly(pair, depth, TextTokens::kAllKinds)) return true;
  uint8_t killer = At(pair, TextTokens::kAllKinds).killer;
  if (killer == TextTokens::kKinds || ((kinds >> killer) & 1)) return false;
  return CoversOnly(pair, depth, kinds);
}

bool TextCover::CoversOnly(Pair pair, uint8_t depth, TextTokens::KindSet kinds) {
  const Known* k = &At(pair, kinds);
  if (k->unbounded || depth <= k->safe) return true;
  if (depth >= k->unsafe) return false;
  // As deep as any token goes: what the search proves answers the later
  // questions about the pairs it reaches.
  Search(pair, kinds, std::max(depth, max_depth_));
  k = &At(pair, kinds);
  return k->unbounded || depth <= k->safe;
}

void TextCover::Search(Pair start, TextTokens::KindSet kinds, uint8_t depth) {
  ++stamp_;
  reached_.clear();
  auto reach = [&](Pair pair, int layer) {
    if (seen_.size() <= pair) seen_.resize(rows_.rows() * TextTokens::kPositions, 0);
    if (seen_[pair] == stamp_) return false;
    seen_[pair] = stamp_;
    reached_.push_back({pair, static_cast<uint8_t>(layer)});
    return true;
  };
  reach(start, 0);
  layer_.assign(1, start);
  // Layers are distances from the start. When every pair of the layers
  // before `verified` takes each text byte to a live row, a pair first
  // reached at layer k is safe for texts of verified - k bytes: what they
  // pass is reached from the start before `verified`.
  int verified = depth;
  bool dies = false;
  for (int d = 0; d < depth && verified == depth && !layer_.empty(); ++d) {
    next_layer_.clear();
    for (size_t i = 0; i < layer_.size() && verified == depth; ++i) {
      Pair pair = layer_[i];
      auto p = static_cast<uint8_t>(pair % TextTokens::kPositions);
      auto row = static_cast<int32_t>(pair / TextTokens::kPositions);
      if (!rows_.built(row)) budget_ -= std::min(budget_, kRowCost);
      int32_t slot = rows_.Slot(row);
      for (auto [b, after] : TextTokens::Bytes(p)) {
        if (((kinds >> TextTokens::KindOf(b)) & 1) == 0) continue;
        if (budget_ == 0) {
          verified = d;
          break;
        }
        --budget_;
        int32_t v = rows_.Next(slot, b);
        if (v < 0) {
          verified = d;
          dies = true;
          At(start, kinds).killer = TextTokens::KindOf(b);
          break;
        }
        Pair to = static_cast<Pair>(v) * TextTokens::kPositions + after;
        if (reach(to, d + 1)) next_layer_.push_back(to);
      }
    }
    layer_.swap(next_layer_);
  }
  bool exhausted = verified == depth && layer_.empty();  // every reachable pair checked: any length
  for (auto [pair, layer] : reached_) {
    Known& k = At(pair, kinds);
    if (exhausted)
      k.unbounded = true;
    else if (verified > layer)
      k.safe = std::max<uint8_t>(k.safe, static_cast<uint8_t>(verified - layer));
  }
  if (dies) {
    Known& k = At(start, kinds);
    k.unsafe = std::min<uint8_t>(k.unsafe, static_cast<uint8_t>(verified + 1));
  }
}

}  // namespace llmhost::grammar
