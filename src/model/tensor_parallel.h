// Tensor parallelism (Megatron-style) over the ranks of one host: each rank
// (a GPU, or a CPU backend standing in for one in tests) holds a slice of
// every layer and computes its part of each step; collectives
// (backend/collective.h) add the parts up.
//
//   attention: q/k/v column-parallel by KV-head groups (rank r keeps KV
//              heads [r·kv/N, (r+1)·kv/N) and their query heads; with fewer
//              KV heads than ranks, each KV head is kept by N/kv ranks, each
//              with its share of the head's query heads), o row-parallel (its
//              input columns of those query heads), then an all-reduce of o's
//              output;
//   MLP:       gate/up column-parallel, down row-parallel, all-reduce (MoE:
//              each expert so, the router whole on every rank);
//   embedding: vocabulary-parallel rows (an id outside a rank's rows embeds
//              as zeros there), all-reduce; the head the same rows, each rank
//              computing its logits columns.
// Norms, residuals and biases of row-parallel outputs are whole on every
// rank and applied after the all-reduce, so the hidden state is the same
// bits on every rank. Quantized matrices are cut on whole groups/blocks.
#pragma once

#include <cstdint>

#include "backend/collective.h"
#include "model/arch.h"
#include "model/weight_slice.h"
#include "util/status.h"

namespace llmhost {

// Where a rank's model sits in its group.
struct ShardInfo {
  int rank = 0, size = 1;
  Collective* comm = nullptr;       // size > 1
  const ModelSpec* full = nullptr;  // the unsplit model's spec (size > 1)
  RowRange vocab;                   // this rank's rows of the embedding table and head
};

// The spec one rank computes with: its share of the attention heads (by KV
// heads), of the FFN and of each expert. InvalidArgument naming what does
// not split into `size` equal parts.
Result<ModelSpec> ShardSpec(const ModelSpec& full, int size);

// Rank r's rows of a vocabulary: ceil(vocab / size) a rank, the last fewer.
RowRange VocabRows(int64_t vocab, int rank, int size);

// Rank r's rows of k (or v): its KV heads, or the one head it shares with
// other ranks when there are fewer KV heads than ranks.
RowRange KvRows(const ModelSpec& full, int rank, int size);

}  // namespace llmhost
