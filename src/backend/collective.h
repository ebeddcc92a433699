// Collectives among the ranks of a tensor-parallel group: one backend per
// rank (one GPU each, or CPU backends standing in for them in tests), one
// Collective per rank, each called by its rank's thread only.
//
//   auto group = MakeCollectives(backends);   // at load, once
//   (*group)[r]->AllReduceSum(t, n);           // inside rank r's forward step
//
// Every rank calls the same collectives in the same order with the same
// count (a rank that skips one deadlocks the others). Calls are enqueued on
// the rank's backend like its ops: on a GPU they run on its stream, may be
// captured into its device graphs, and return before the data is there; the
// CPU stand-in runs them at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "util/status.h"

namespace llmhost {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // buf[0, count) (this rank's device memory) becomes the sum of every rank's
  // buf, added in rank order (((b0 + b1) + b2) + ...): the same bits on every
  // rank, and for each element whatever the count (batch invariance).
  virtual void AllReduceSum(float* buf, int64_t count) = 0;
};

// One Collective per backend, rank i for backends[i]. Every backend must be
// of one kind: CPU backends get the in-process stand-in, CUDA backends
// (distinct GPUs) NCCL. NotSupported, saying why, otherwise (NCCL missing,
// a GPU named twice, mixed kinds).
Result<std::vector<std::unique_ptr<Collective>>> MakeCollectives(std::span<Backend* const> backends);

// The CPU stand-in on its own (what MakeCollectives gives CPU backends).
std::vector<std::unique_ptr<Collective>> MakeInProcessCollectives(int size);

}  // namespace llmhost
