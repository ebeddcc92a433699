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
  const bool replicate = full.n_kv_heads < size && size % full.n_kv_heads == 0 && full.n_heads % size == 0;
  if (full.n_kv_heads % size != 0 && !replicate) return Indivisible("key/value heads", full.n_kv_heads, size);
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
  s.n_kv_heads = replicate ? 1 : full.n_kv_heads / size;  // a KV head per rank, kept by several
  s.intermediate = full.intermediate / size;
  s.moe_intermediate = full.moe_intermediate / size;
  return s;
}

RowRange KvRows(const ModelSpec& full, int rank, int size) {
  const int64_t hd = full.head_dim;
  if (full.n_kv_heads % size == 0) {
    const int64_t per = full.n_kv_heads / size * hd;
    return {per * rank, per * (rank + 1)};
  }
  // Fewer KV heads than ranks: rank r's query heads [r·H/N, (r+1)·H/N) all
  // attend to KV head floor(r·kv/N) (N is a multiple of kv).
  const int64_t head = static_cast<int64_t>(rank) * full.n_kv_heads / size;
  return {head * hd, (head + 1) * hd};
}

RowRange VocabRows(int64_t vocab, int rank, int size) {
  const int64_t per = (vocab + size - 1) / size;
  const int64_t begin = std::min<int64_t>(vocab, per * rank);
  return {begin, std::min<int64_t>(vocab, begin + per)};
}

}  // namespace llmhost
