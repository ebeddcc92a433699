#include "model/tensor_parallel.h"

#include <algorithm>
#include <string>

namespace llmhost {

namespace {

Status Indivisible(const char* what, int64_t value, int size) {
  return Status::InvalidArgument("--tensor-parallel " + std::to_string(size) + ": the model's " + what + " (" +
                                 std::to_string(value) + ") do not split into " + std::to_string(size) +
                                 " equal parts; choose a tensor-parallel size that divides it");
}

}  // namespace

Result<ModelSpec> ShardSpec(const ModelSpec& full, int size) {
  if (size < 1) return Status::InvalidArgument("--tensor-parallel must be at least 1");
  ModelSpec s = full;
  if (size == 1) return s;
  if (full.n_kv_heads % size != 0) return Indivisible("key/value heads", full.n_kv_heads, size);
  if (VocabRows(full.vocab, size - 1, size).begin >= full.vocab) {
    return Status::InvalidArgument("--tensor-parallel " + std::to_string(size) + ": the model's vocabulary (" +
                                   std::to_string(full.vocab) + " rows) is too small to give every rank some");
  }
  const bool dense = std::any_of(full.layers.begin(), full.layers.end(), [](const LayerSpec& l) { return !l.moe; });
  const bool moe = std::any_of(full.layers.begin(), full.layers.end(), [](const LayerSpec& l) { return l.moe; });
  if (dense && full.intermediate % size != 0) return Indivisible("intermediate size", full.intermediate, size);
  if (moe && full.moe_intermediate % size != 0) {
    return Indivisible("expert intermediate size", full.moe_intermediate, size);
  }
  s.n_heads = full.n_heads / size;
  s.n_kv_heads = full.n_kv_heads / size;
  s.intermediate = full.intermediate / size;
  s.moe_intermediate = full.moe_intermediate / size;
  return s;
}

RowRange VocabRows(int64_t vocab, int rank, int size) {
  const int64_t per = (vocab + size - 1) / size;
  const int64_t begin = std::min<int64_t>(vocab, per * rank);
  return {begin, std::min<int64_t>(vocab, begin + per)};
}

}  // namespace llmhost
