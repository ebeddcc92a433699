// Prefill memory guard: prices a prompt before any work is done, so that a
// prompt the machine cannot hold is refused with 400 prefill_memory_exceeded
// instead of pushing the process into out-of-memory.
//
//   KV bytes      = new tokens × n_kv_heads × head_dim × dtype bytes × 2 (K and V) × n_layers
//   scratch bytes = one prefill chunk's activations
//                   chunk × (4·hidden + 2·q_dim + 2·kv_dim + 3·intermediate) × 4
//                 + attention scores: rows × sequence length × 4
//                   (rows = the kernel's attention_scratch_rows; chunk × n_heads
//                   for a kernel that materialises them)
//   new tokens    = prompt − cached prefix (a fully cached prompt costs 0)
//
//   priced        = the chunk's activations, up to the workspace the model's
//                   admission price holds (PrefillDims::priced_workspace_bytes)
//
//   estimate, for a KV cache that grows (claims its blocks from the pool and
//   waits for memory other requests hold): what the prompt needs with nothing
//   else running = the model and the pinned ones at their admission sizes +
//   KV + scratch − priced. With a KV pool allocated up front (counted in
//   committed already): max(device_active, footprint + KV + scratch,
//   committed + scratch − priced).
//   limit    = admission ceiling × prefill safety
//
// EnginePool::CheckPrefill evicts idle models (never the requester, a
// pinned, busy or loading one) and reclaims before rejecting.
#pragma once

#include <cstdint>
#include <string>

#include "pool/loaded_engine.h"
#include "pool/memory_limits.h"

namespace llmhost {

uint64_t KvBytesForTokens(const PrefillDims& d, int64_t tokens);
// Blocks of `block_bytes` that free at least `bytes` (rounded up; 0 for 0).
int64_t KvBlocksToFree(uint64_t bytes, uint64_t block_bytes);
uint64_t PrefillScratchBytes(const PrefillDims& d, int64_t chunk_tokens, int64_t sequence_length);

struct PrefillEstimate {
  uint64_t kv_bytes = 0;
  uint64_t scratch_bytes = 0;
  uint64_t priced_bytes = 0;  // of scratch_bytes: held in the model's admission price already
  uint64_t peak() const { return kv_bytes > UINT64_MAX - scratch_bytes ? UINT64_MAX : kv_bytes + scratch_bytes; }
  // What the prompt adds to the model's admitted or committed bytes.
  uint64_t beyond_price() const { return peak() - priced_bytes; }
};
// Zero without model dimensions or new tokens.
PrefillEstimate EstimatePrefill(const PrefillDims& d, int64_t prompt_tokens, int64_t cached_tokens);

struct PrefillReadings {
  uint64_t device_active = 0, footprint = 0, committed = 0;
};
// The peak the process would reach (see above).
uint64_t PrefillPeak(const PrefillEstimate& e, const PrefillReadings& r, bool kv_preallocated);

// "... prefill memory guard rejected this prompt: Prefill would require ~X
// peak (current A + KV B + scratch C) but the limit is L ..." with advice.
std::string PrefillRejectMessage(uint64_t peak, uint64_t current, const PrefillEstimate& e,
                                 const MemoryLimits& limits);

}  // namespace llmhost
