// Collectives among CUDA backends through NCCL, one GPU per rank, all in this
// process (ncclCommInitAll). NCCL is opened at run time (dlopen: LLMHOST_NCCL
// if set, else libnccl.so.2), so that a binary without it still runs on one
// GPU.
//
// AllReduceSum keeps collective.h's promise of rank-order sums: over two
// ranks ncclAllReduce (a + b == b + a exactly); over more, ncclAllGather into
// a per-rank scratch buffer [size, count] (in steps of 64 MiB gathered) and a
// kernel that adds element i over ranks 0, 1, ... in order. Both run on the
// rank's stream and may be recorded into its device graphs once the scratch
// buffer is big enough (it grows only in a plain run). A failed NCCL call or
// scratch growth becomes the backend's sticky error; that rank has then
// skipped the exchange, and the others' calls never finish (the group is lost).
// The backends must outlive their collectives; a collective's destruction
// drops its backend's recorded graphs.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/collective.h"

namespace llmhost::cuda {

// One Collective per backend (each a CudaBackend on its own GPU), rank i for
// backends[i]. NotSupported when NCCL cannot be opened or started, or a GPU
// is named twice; InvalidArgument for a backend that is not CUDA.
Result<std::vector<std::unique_ptr<Collective>>> MakeNcclCollectives(std::span<Backend* const> backends);

}  // namespace llmhost::cuda
