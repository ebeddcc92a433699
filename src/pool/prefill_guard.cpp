#include "pool/prefill_guard.h"

#include <algorithm>

#include "pool/engine_pool_internal.h"
#include "util/log.h"

namespace llmhost {

namespace {

// Saturating products: dimensions come from model files.
uint64_t Mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

uint64_t Add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t U(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

}  // namespace

uint64_t KvBytesForTokens(const PrefillDims& d, int64_t tokens) {
  return Mul(Mul(Mul(Mul(Mul(U(tokens), U(d.n_kv_heads)), U(d.head_dim)), U(d.kv_dtype_bytes)), 2), U(d.n_layers));
}

int64_t KvBlocksToFree(uint64_t bytes, uint64_t block_bytes) {
  if (bytes == 0 || block_bytes == 0) return 0;
  return static_cast<int64_t>((bytes + block_bytes - 1) / block_bytes);
}

namespace {

// A chunk's activations: what WorkspaceBytes prices per row.
uint64_t ActivationBytes(const PrefillDims& d, int64_t chunk) {
  const uint64_t q_dim = Mul(U(d.n_heads), U(d.head_dim));
  const uint64_t kv_dim = Mul(U(d.n_kv_heads), U(d.head_dim));
  const uint64_t per_token =
      Add(Add(Add(Mul(4, U(d.hidden)), Mul(2, q_dim)), Mul(2, kv_dim)), Mul(3, U(d.intermediate)));
  return Mul(Mul(U(chunk), per_token), 4);
}

}  // namespace

uint64_t PrefillScratchBytes(const PrefillDims& d, int64_t chunk, int64_t length) {
  const uint64_t activations = ActivationBytes(d, chunk);
  const uint64_t rows = d.attention_scratch_rows > 0 ? U(d.attention_scratch_rows) : Mul(U(chunk), U(d.n_heads));
  return Add(activations, Mul(Mul(rows, U(length)), 4));
}

PrefillEstimate EstimatePrefill(const PrefillDims& d, int64_t prompt_tokens, int64_t cached_tokens) {
  PrefillEstimate e;
  const int64_t fresh = prompt_tokens - std::max<int64_t>(cached_tokens, 0);
  if (!d.valid() || fresh <= 0) return e;
  const int64_t chunk = d.prefill_chunk > 0 ? std::min(d.prefill_chunk, fresh) : fresh;
  e.kv_bytes = KvBytesForTokens(d, fresh);
  e.scratch_bytes = PrefillScratchBytes(d, chunk, prompt_tokens);
  e.priced_bytes = std::min({ActivationBytes(d, chunk), d.priced_workspace_bytes, e.scratch_bytes});
  return e;
}

uint64_t PrefillPeak(const PrefillEstimate& e, const PrefillReadings& r, bool kv_preallocated) {
  if (kv_preallocated) {
    return std::max({r.device_active, Add(r.footprint, e.peak()), Add(r.committed, e.scratch_bytes - e.priced_bytes)});
  }
  return Add(std::max({r.device_active, r.footprint, r.committed}), e.peak());
}

std::string PrefillRejectMessage(uint64_t peak, uint64_t current, const PrefillEstimate& e,
                                 const MemoryLimits& limits) {
  const std::string priced =
      e.priced_bytes > 0 ? "; " + FormatBytes(e.priced_bytes) + " of the scratch is in the model's admitted size" : "";
  return "The prefill memory guard rejected this prompt: Prefill would require ~" + FormatBytes(peak) +
         " peak (current " + FormatBytes(current) + " + KV " + FormatBytes(e.kv_bytes) + " + scratch " +
         FormatBytes(e.scratch_bytes) + priced + ") but the limit is " + FormatBytes(limits.prefill_limit) + " (" +
         limits.Describe() + "). Raise the memory guard tier (--memory-guard aggressive), free memory, "
         "or shorten the context.";
}

uint64_t EnginePool::AloneBytes(const std::string& id, Budget b) const {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = static_cast<size_t>(b);
  uint64_t bytes = 0;
  for (const auto& [sid, s] : slots_) {
    if (s->state == SlotState::kUnloaded || (sid != id && !s->pinned())) continue;
    const uint64_t kv = s->kv_claimed_in(b);
    bytes += s->resident[i] > kv ? s->resident[i] - kv : 0;
  }
  return bytes;
}

PoolError EnginePool::CheckPrefill(const ModelLease& lease, int64_t prompt_tokens, int64_t cached_tokens) {
  if (!options_.guard.prefill_guard || !options_.guard.guard_on()) return PoolError();
  PrefillDims dims = lease.engine().prefill_dims();
  if (dims.budget != Budget::kHost) {
    std::lock_guard<std::mutex> lock(mu_);
    dims.budget = static_cast<const Slot*>(lease.slot_.get())->home;  // the GPU it was placed on
  }
  const PrefillEstimate est = EstimatePrefill(dims, prompt_tokens, cached_tokens);
  if (est.peak() == 0) return PoolError();
  bool reclaimed = false;
  for (;;) {
    const MemorySnapshot m = SampleRss();  // on every request: no page-table walk
    // A GPU model's prompt is priced in the GPU's memory (no footprint there).
    const bool host = dims.budget == Budget::kHost;
    const MemoryLimits* limits = m.Limits(dims.budget);
    if (!limits) return PoolError();
    const MemoryLimits& L = *limits;
    const size_t bi = static_cast<size_t>(dims.budget);
    const uint64_t limit = L.prefill_limit;
    if (limit == 0) return PoolError();
    const PrefillReadings r{m.device_active[bi], host ? m.footprint : 0, m.committed[bi]};
    // A growing KV cache claims the prompt's blocks as it goes and waits for
    // memory that other requests hold; only a prompt that could not fit even
    // with nothing else running is refused: this model and the pinned ones
    // (at their admission sizes) + the prompt's KV and scratch.
    const uint64_t peak =
        dims.kv_preallocated ? PrefillPeak(est, r, true) : Add(AloneBytes(lease.id(), dims.budget), est.beyond_price());
    if (peak <= limit) return PoolError();
    // Make room: idle models other than the requester, size-aware (priced
    // alone, idle models do not count: nothing to make room from).
    const int64_t need = static_cast<int64_t>(std::min<uint64_t>(peak - limit, INT64_MAX));
    if (dims.kv_preallocated && EvictIdle(false, lease.id(), need, dims.budget)) continue;
    if (dims.kv_preallocated && !reclaimed) {
      Reclaim();
      reclaimed = true;
      continue;
    }
    PoolError e;
    e.code = PoolErrorCode::kPrefillRejected;
    const uint64_t current = dims.kv_preallocated ? std::max({r.device_active, r.footprint, r.committed})
                                                  : AloneBytes(lease.id(), dims.budget);
    e.message = PrefillRejectMessage(peak, current, est, L);
    e.estimated_bytes = peak;
    e.limit_bytes = limit;
    LOG_WARN("pool: prefill guard: " << lease.id() << ": " << prompt_tokens << " tokens (" << cached_tokens
                                     << " cached) need ~" << FormatBytes(peak) << ", limit "
                                     << FormatBytes(limit) << ": rejected");
    return e;
  }
}

}  // namespace llmhost
